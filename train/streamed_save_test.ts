/**
 * The streamed save writes the files the whole-array path writes, byte for byte: the tiny model
 * after two steps of AdamW and of DisTrO (own result pending), in one buffer and split into
 * segments (`maxBufferBytes`), F32 and BF16, one weights file and shards, with chunks small
 * enough that every large tensor is read in several pieces.
 */
import assert from "node:assert/strict";
import { optimizerGeometry, optimizerToSafetensors, saveTraining } from "./mod.ts";
import { captureTraining, writeTrainingCheckpoint } from "./testing/whole_checkpoint.ts";
import {
  DEFAULT_MAX_SHARD_BYTES,
  encodeSafetensors,
  planShards,
  shardFileName,
  weightsToSafetensors,
} from "../model/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import {
  CHUNKING,
  LR,
  SEGMENT_CAP,
  TINY_CONFIG,
  TINY_LAYOUT,
  tinyParts,
  trainerAfterStep2,
  trainSteps,
} from "../tests/support/tiny_training.ts";

/** Not a divisor of any tensor's size: the last chunk of a tensor is a short one. */
const CHUNK_FLOATS = 1000;
/** Splits the tiny model's weights into several shards. */
const SHARD_BYTES = 200_000;

/** Asserts equal bytes, naming the first difference (a deepEqual diff of big arrays is slow). */
function assertSameBytes(actual: Uint8Array | undefined, expected: Uint8Array, what: string) {
  assert.ok(actual !== undefined, `${what} is missing`);
  assert.equal(actual.length, expected.length, `${what}: length`);
  const at = actual.findIndex((b, i) => b !== expected[i]);
  assert.equal(at, -1, `${what}: first difference at byte ${at}`);
}

/** Every file of `dir` by name. */
async function files(dir: string): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for await (const e of Deno.readDir(dir)) out.set(e.name, await Deno.readFile(`${dir}/${e.name}`));
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)));
}

const cases = [
  { kind: "adamw", split: false, dtype: "F32", shards: false },
  { kind: "adamw", split: true, dtype: "F32", shards: true },
  { kind: "adamw", split: true, dtype: "BF16", shards: false },
  { kind: "distro", split: false, dtype: "F32", shards: false },
  { kind: "distro", split: true, dtype: "F16", shards: true },
] as const;

for (const { kind, split, dtype, shards } of cases) {
  const what = `${kind}, ${split ? "split into segments" : "one buffer"}, ${dtype}` +
    (shards ? ", sharded" : "");
  Deno.test(`streamed save (${what}) writes the whole-array path's files byte for byte`, async () => {
    using rt = await GpuRuntime.create(split ? { maxBufferBytes: SEGMENT_CAP } : {});
    const parts = tinyParts(rt, kind);
    using _model = parts.model;
    using _optimizer = parts.optimizer;
    if (split) assert.ok(parts.model.params.buffers.length >= 3, "the model is split");
    await trainSteps(parts, 1, 2);
    const geometry = optimizerGeometry(TINY_LAYOUT, kind, CHUNKING);
    const maxShardBytes = shards ? SHARD_BYTES : undefined;
    const dir = await Deno.makeTempDir();
    try {
      const captured = await captureTraining(parts, { lastLr: LR });
      if (kind === "distro") {
        assert.notEqual(captured.optimizer.kind === "distro" && captured.optimizer.own, null);
      }
      await writeTrainingCheckpoint(`${dir}/whole`, {
        config: TINY_CONFIG,
        layout: TINY_LAYOUT,
        weights: captured.weights,
        trainer: trainerAfterStep2(kind, dtype),
        optimizer: captured.optimizer,
      }, { geometry, dtype, maxShardBytes });
      // The parameters as the run holds them (DisTrO: with the next step's lookahead applied).
      const running = await parts.model.readParams();
      const reports: [number, number][] = [];
      await saveTraining(`${dir}/streamed`, parts, {
        config: TINY_CONFIG,
        layout: TINY_LAYOUT,
        trainer: trainerAfterStep2(kind, dtype),
        geometry,
        lastLr: LR,
        dtype,
        maxShardBytes,
        chunkFloats: CHUNK_FLOATS,
        onProgress: (done, total) => reports.push([done, total]),
      });
      // Said after every chunk, up to the parameters and the optimizer state in full.
      assert.ok(reports.length > 10, `${reports.length} reports`);
      assert.ok(reports.every(([d], i) => i === 0 || d > reports[i - 1][0]), "growing");
      const [done, total] = reports.at(-1)!;
      assert.equal(done, total);
      assert.ok(total >= 3 * 4 * TINY_LAYOUT.paramCount || kind === "distro", `${total} bytes`);
      const whole = await files(`${dir}/whole`);
      const streamed = await files(`${dir}/streamed`);
      assert.deepEqual([...streamed.keys()], [...whole.keys()], "the same files");
      for (const [name, bytes] of whole) {
        assert.ok(bytes.length > 0);
        assertSameBytes(streamed.get(name), bytes, name);
      }
      // The whole-array encoders give these bytes too (the format as it was before streaming).
      assertSameBytes(
        streamed.get("optimizer.safetensors"),
        encodeSafetensors(optimizerToSafetensors(captured.optimizer, geometry)),
        "optimizer.safetensors against the whole-array encoder",
      );
      const all = weightsToSafetensors(TINY_LAYOUT, captured.weights, dtype);
      const plan = planShards(
        [...all.tensors].map(([name, t]) => ({ name, bytes: t.bytes.length })),
        maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES,
      );
      assert.equal(plan.length > 1, shards);
      plan.forEach((names, k) => {
        const file = plan.length === 1 ? "model.safetensors" : shardFileName(k + 1, plan.length);
        const tensors = new Map(names.map((n) => [n, all.tensors.get(n)!]));
        assert.deepEqual(
          streamed.get(file),
          encodeSafetensors({ tensors, metadata: all.metadata }),
        );
      });
      // The save left the run as it was (DisTrO's lookahead set up again).
      const bytes = (a: Float32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      const after = await parts.model.readParams();
      assertSameBytes(bytes(after), bytes(running), "parameters after the save");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
