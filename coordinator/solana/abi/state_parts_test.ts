import assert from "node:assert/strict";
import fc from "fast-check";
import { arbCoordinatorState } from "../../encoding/testing/arbitraries.ts";
import { encodeCoordinatorState } from "../../encoding/mod.ts";
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

Deno.test("the parts are the bytes a whole version-1 state holds, and decode back", () => {
  fc.assert(
    fc.property(arbCoordinatorState({ maxClients: 4, maxWitnesses: 0, version: 1 }), (s) => {
      const model = encodeModelBytes(s.model);
      const config = encodeConfigBytes(s.config);
      assert.equal(config.length, CONFIG_WIRE_BYTES);
      const whole = encodeCoordinatorState(uninitializedState("", s.model, s.config), {
        version: 1,
      });
      // header (8), an empty run id (1), the run state (1), then the model and the config
      assert.deepEqual(whole.subarray(10, 10 + model.length), model);
      assert.deepEqual(
        whole.subarray(10 + model.length, 10 + model.length + config.length),
        config,
      );
      assert.deepEqual(decodeModelBytes(model), s.model);
      assert.deepEqual(decodeConfigBytes(config), s.config);
    }),
    { numRuns: 200 },
  );
});
