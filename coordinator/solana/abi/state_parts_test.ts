import assert from "node:assert/strict";
import fc from "fast-check";
import { arbCoordinatorState } from "../../encoding/testing/arbitraries.ts";
import { encodeCoordinatorState, StateDecodeError } from "../../encoding/mod.ts";
import { testConfig, testModel } from "../../../tests/support/coordinator_fixtures.ts";
import {
  CONFIG_WIRE_BYTES,
  decodeConfigBytes,
  decodeModelBytes,
  encodeConfigBytes,
  encodeModelBytes,
  uninitializedState,
} from "./state_parts.ts";

Deno.test("a config is 66 bytes on the wire (docs/solana-program.md, update's data)", () => {
  assert.equal(CONFIG_WIRE_BYTES, 66);
});

Deno.test("the parts are the bytes a whole state holds (config: version 1, model: 4)", () => {
  fc.assert(
    fc.property(arbCoordinatorState({ maxClients: 4, maxWitnesses: 0, version: 1 }), (s) => {
      const model = encodeModelBytes(s.model);
      const config = encodeConfigBytes(s.config);
      assert.equal(config.length, CONFIG_WIRE_BYTES);
      const v1 = encodeCoordinatorState(uninitializedState("", s.model, s.config), {
        version: 1,
      });
      // header (8), an empty run id (1), the run state (1), then the model and the config
      const v1Model = v1.subarray(10, 10 + model.length - 1);
      assert.deepEqual(
        v1.subarray(10 + v1Model.length, 10 + v1Model.length + config.length),
        config,
      );
      // The model is version 4's: version 1's bytes, then the snapshot dtype.
      const v4 = encodeCoordinatorState(uninitializedState("", s.model, testConfig()));
      assert.deepEqual(v4.subarray(10, 10 + model.length), model);
      assert.deepEqual(model.subarray(0, -1), v1Model);
      assert.deepEqual(decodeModelBytes(model), s.model);
      assert.deepEqual(decodeConfigBytes(config), s.config);
    }),
    { numRuns: 200 },
  );
});

Deno.test("a model part carries its snapshot dtype as its last byte, 0 or 1", () => {
  const model = testModel({ snapshotDtype: "bf16" });
  const bytes = encodeModelBytes(model);
  assert.equal(bytes.at(-1), 1);
  assert.deepEqual(decodeModelBytes(bytes), model);
  bytes[bytes.length - 1] = 0;
  assert.equal(decodeModelBytes(bytes).snapshotDtype, "f32");
  bytes[bytes.length - 1] = 2;
  assert.throws(
    () => decodeModelBytes(bytes),
    (e: unknown) => e instanceof StateDecodeError && e.field === "model.snapshotDtype",
  );
  // A version-1 model (no snapshot dtype) is one byte short: its config would be misread.
  assert.throws(() => decodeModelBytes(bytes.subarray(0, -1)), StateDecodeError);
});
