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
  assert.equal(parseDemoArgs(["--model=bytes"])?.model, "bytes");
  assert.equal(parseDemoArgs(["-h"]), null);
  assert.throws(() => parseDemoArgs(["--model", "gpt"]), UsageError);
  assert.throws(() => parseDemoArgs(["--model", "gpt"]), /must be one of bytes, llama-20m/);
  assert.throws(() => parseDemoArgs(["--model"]), /--model needs a value \(bytes\|llama-20m\)/);
  // A misspelt testnet flag is refused here, with the one meant.
  assert.throws(
    () => parseDemoArgs(["--stop-after-epoch", "1"]),
    /unknown flag --stop-after-epoch \(did you mean --stop-after-epochs\?\)/,
  );
  // The user's testnet flags come after the demo's, and win.
  const args = parseTestnetArgs([...demoArgs(DEMO_MODELS.bytes), "--stop-after-epochs", "1"]);
  assert.equal(args?.stopAfterEpochs, 1);
  assert.equal(args?.numClients, 3);
  assert.equal(args?.calibrate, true);
  assert.equal(args?.dashboardPort, 20003);
});

Deno.test("the environment wins over the demo's settings, the command line over both", () => {
  const env = { PSYCHE_MODEL: "llama-20m", PSYCHE_NUM_CLIENTS: "2", PSYCHE_CALIBRATE: "0" };
  const demo = parseDemoArgs([], env);
  assert.equal(demo?.model, "llama-20m");
  const model = DEMO_MODELS[demo!.model];
  const args = parseTestnetArgs(demoArgs(model, env), env);
  assert.equal(args?.numClients, 2);
  assert.equal(args?.calibrate, false);
  assert.equal(args?.stopAfterEpochs, 3, "a setting the environment leaves is the demo's");
  assert.equal(
    parseTestnetArgs([...demoArgs(model, env), "--num-clients", "4"], env)?.numClients,
    4,
  );
  assert.throws(
    () => parseDemoArgs([], { PSYCHE_MODEL: "/models/x" }),
    /not "\/models\/x" \(PSYCHE_MODEL is set in the environment\)/,
  );
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
