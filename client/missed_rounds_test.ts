import assert from "node:assert/strict";
import { MISSED_ROUNDS_TO_WARN, MissedRounds } from "./missed_rounds.ts";

Deno.test("three missed rounds in a row warn once; a round made starts the count again", () => {
  const rounds = new MissedRounds();
  const said = [true, true, true, true, false, true, true, false, true, true, true]
    .map((missed) => rounds.note(missed));
  assert.deepEqual(said, [null, null, 3, null, null, null, null, null, null, null, 3]);
  assert.equal(MISSED_ROUNDS_TO_WARN, 3);
});
