import assert from "node:assert/strict";
import { prepareRunConfig } from "./run_config.ts";
import { tinyRunToml } from "../testing/testnet.ts";
import { ConfigError } from "../../common/mod.ts";

Deno.test("a data server run is moved to the given port; the rest is unchanged", async () => {
  const text = await Deno.readTextFile("config/llama-tiny/state.toml");
  const original = prepareRunConfig(text, "state.toml");
  const moved = prepareRunConfig(text, "state.toml", { dataPort: 40001 });
  assert.ok(moved.servesData);
  assert.deepEqual(moved.run.model.dataLocation, { kind: "Server", address: "127.0.0.1:40001" });
  assert.deepEqual(
    { ...moved.run, model: { ...moved.run.model, dataLocation: null } },
    { ...original.run, model: { ...original.run.model, dataLocation: null } },
  );
  assert.throws(() => prepareRunConfig(text, "s", { dataPort: 70000 }), RangeError);
});

Deno.test("runs without a data server are passed through; invalid ones refused", () => {
  const text = tinyRunToml();
  const prepared = prepareRunConfig(text, "tiny.toml", { dataPort: 40001 });
  assert.equal(prepared.text, text);
  assert.equal(prepared.servesData, false);
  assert.throws(
    () => prepareRunConfig(text.replace("epoch_time = 10", "epoch_time = -1"), "bad.toml"),
    (e) => e instanceof ConfigError && /bad\.toml/.test(e.message),
  );
});
