import assert from "node:assert/strict";
import fc from "fast-check";
import { arbCoordinatorState } from "../../encoding/testing/arbitraries.ts";
import { encodeCoordinatorState, StateDecodeError } from "../../encoding/mod.ts";
import { testConfig, testModel } from "../../../tests/support/coordinator_fixtures.ts";
import {
  CONFIG_V1_BYTES,
  CONFIG_WIRE_BYTES,
  decodeConfigBytes,
  decodeModelBytes,
  encodeConfigBytes,
  encodeModelBytes,
  uninitializedState,
} from "./state_parts.ts";

Deno.test("a config is 68 bytes on the wire: version 1's 66, then the bar epochs", () => {
  assert.equal(CONFIG_V1_BYTES, 66);
  assert.equal(CONFIG_WIRE_BYTES, 68);
  const bytes = encodeConfigBytes(testConfig({ verificationBarEpochs: 0x1234 }));
  assert.deepEqual([...bytes.subarray(66)], [0x34, 0x12]);
  assert.equal(decodeConfigBytes(bytes).verificationBarEpochs, 0x1234);
  assert.throws(
    () => encodeConfigBytes(testConfig({ verificationBarEpochs: 0x10000 })),
    /config\.verificationBarEpochs must be an integer in \[0, 65535\], found 65536/,
  );
  assert.throws(() => decodeConfigBytes(bytes.subarray(0, 66)), /A config is 68 bytes, found 66/);
});

Deno.test("the parts are the bytes a whole state holds (config: version 1, model: 4)", () => {
  const arb = arbCoordinatorState({ maxClients: 4, maxWitnesses: 0, version: 1 });
  fc.assert(
    fc.property(arb, fc.integer({ min: 0, max: 0xffff }), (s, bar) => {
      const model = encodeModelBytes(s.model);
      const config = encodeConfigBytes({ ...s.config, verificationBarEpochs: bar });
      assert.equal(config.length, CONFIG_WIRE_BYTES);
      const v1 = encodeCoordinatorState(uninitializedState("", s.model, s.config), {
        version: 1,
      });
      // header (8), an empty run id (1), the run state (1), then the model and the config,
      // whose version 1 bytes the wire's config starts with.
      const v1Model = v1.subarray(10, 10 + model.length - 1);
      assert.deepEqual(
        v1.subarray(10 + v1Model.length, 10 + v1Model.length + CONFIG_V1_BYTES),
        config.subarray(0, CONFIG_V1_BYTES),
      );
      assert.equal(new DataView(config.buffer).getUint16(CONFIG_V1_BYTES, true), bar);
      // The model is version 4's: version 1's bytes, then the snapshot dtype.
      const v4 = encodeCoordinatorState(uninitializedState("", s.model, testConfig()));
      assert.deepEqual(v4.subarray(10, 10 + model.length), model);
      assert.deepEqual(model.subarray(0, -1), v1Model);
      assert.deepEqual(decodeModelBytes(model), s.model);
      assert.deepEqual(decodeConfigBytes(config), { ...s.config, verificationBarEpochs: bar });
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
