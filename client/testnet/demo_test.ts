import assert from "node:assert/strict";
import { join } from "node:path";
import {
  checkpointStep,
  DEFAULT_DEMO_MODEL,
  DEMO_MODELS,
  demoArgs,
  describeHeldOut,
  keepLastCheckpoint,
  parseDemoArgs,
} from "./demo.ts";
import { parseTestnetArgs } from "./args.ts";
import { UsageError } from "../../common/mod.ts";

Deno.test("the demo keeps only its last checkpoint", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const name of ["run-step9", "run-step14", "run-step100", "notes"]) {
      await Deno.mkdir(join(dir, name));
    }
    await Deno.writeTextFile(join(dir, "run-step7"), "a file, not a checkpoint");
    await keepLastCheckpoint(dir);
    const left = [];
    for await (const e of Deno.readDir(dir)) left.push(e.name);
    assert.deepEqual(left.sort(), ["notes", "run-step100", "run-step7"]);
    await keepLastCheckpoint(join(dir, "missing"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--model picks the demo's run; the other flags go to the testnet", () => {
  assert.deepEqual(parseDemoArgs([]), { model: DEFAULT_DEMO_MODEL, rest: [] });
  assert.deepEqual(parseDemoArgs(["--logs", "json", "--model", "llama-20m"]), {
    model: "llama-20m",
    rest: ["--logs", "json"],
  });
  assert.equal(parseDemoArgs(["--model=bytes"]).model, "bytes");
  assert.throws(() => parseDemoArgs(["--model", "gpt"]), UsageError);
  assert.throws(() => parseDemoArgs(["--model"]), /must be one of bytes, llama-20m, not nothing/);
  // The user's testnet flags come after the demo's, and win.
  const args = parseTestnetArgs([...demoArgs(DEMO_MODELS.bytes), "--stop-after-epochs", "1"]);
  assert.equal(args?.stopAfterEpochs, 1);
  assert.equal(args?.numClients, 3);
  assert.equal(args?.calibrate, true);
});

Deno.test("every demo run names a config folder that exists", async () => {
  for (const model of Object.values(DEMO_MODELS)) {
    await Deno.stat(join(model.configPath, "state.toml"));
    await Deno.stat(join(model.configPath, "data.toml"));
  }
});

Deno.test("checkpoint steps and the held-out line", () => {
  assert.equal(checkpointStep("/runs/demo/client-1/llama-bytes-brown-step75"), 75);
  assert.equal(checkpointStep("/runs/demo/client-1/llama-bytes-brown-step75/"), 75);
  assert.equal(checkpointStep("/runs/demo/client-1/notes"), null);
  assert.equal(
    describeHeldOut(5.5, 2.75, 75),
    "held-out loss 5.500 -> 2.750 after step 75 (-50.0%)",
  );
  assert.match(describeHeldOut(2, 2.5, 3), /\(\+25\.0%\)$/);
});
