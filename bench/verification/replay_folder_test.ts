import assert from "node:assert/strict";
import {
  checkModelConfig,
  parseManifest,
  REPLAY_FOLDER_FORMAT,
  ReplayFolderError,
  sequencesRead,
  trainerCount,
} from "./replay_folder.ts";

const GOOD = {
  format: REPLAY_FOLDER_FORMAT,
  steps: 3,
  honest: 2,
  seqLen: 64,
  micro: 2,
  model: "config/models/llama-micro",
  modelConfigSha256: "ab12",
  sequences: 100,
};

function parse(fields: Record<string, unknown>) {
  return parseManifest(JSON.stringify(fields), "d/manifest.json");
}

Deno.test("a run reads every trainer's batches, twice over for the other-data attack", () => {
  assert.equal(trainerCount(2), 5);
  // Steps 1..3 of 5 trainers at 2 sequences start at 10, 20, 30 and end before 40; doubled.
  assert.equal(sequencesRead({ steps: 3, honest: 2, micro: 2 }), 2 * 5 * 5 * 2);
  const last = (3 + 1) * trainerCount(2) * 2 - 1;
  assert.ok(last < sequencesRead({ steps: 3, honest: 2, micro: 2 }) / 2);
});

Deno.test("a good manifest parses to its fields", () => {
  assert.deepEqual(parse(GOOD), GOOD);
});

Deno.test("a manifest of another format, or none, is refused saying what to do", () => {
  assert.throws(
    () => parse({ ...GOOD, format: REPLAY_FOLDER_FORMAT + 1 }),
    (e: Error) =>
      e instanceof ReplayFolderError &&
      e.message === `d/manifest.json has format ${REPLAY_FOLDER_FORMAT + 1}, this bench reads ` +
          `format ${REPLAY_FOLDER_FORMAT}: make the folder again with this version's trainer role`,
  );
  assert.throws(() => parseManifest("{", "d/manifest.json"), /d\/manifest.json is not JSON/);
  assert.throws(() => parseManifest("[]", "d/manifest.json"), /must hold a JSON object/);
});

Deno.test("each field's type and range is checked, naming the field and the value", () => {
  assert.throws(
    () => parse({ ...GOOD, steps: 0 }),
    /d\/manifest.json: "steps" must be a positive integer, found 0/,
  );
  assert.throws(
    () => parse({ ...GOOD, seqLen: "64" }),
    /"seqLen" must be a positive integer, found "64"/,
  );
  assert.throws(() => parse({ ...GOOD, micro: 1.5 }), /"micro" must be a positive integer/);
  const { model: _, ...noModel } = GOOD;
  assert.throws(() => parse(noModel), /"model" must be a string, found undefined/);
  assert.throws(
    () => parse({ ...GOOD, sequences: 99 }),
    /"sequences" is 99, but 3 steps of 5 trainers read 100/,
  );
});

Deno.test("the verifier's model config must be the trainers'", () => {
  const m = parse(GOOD);
  checkModelConfig(m, "ab12");
  assert.throws(
    () => checkModelConfig(m, "cd34"),
    /config\/models\/llama-micro\/config.json here has SHA-256 cd34, the trainers' had ab12/,
  );
});
