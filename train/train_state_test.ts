import assert from "node:assert/strict";
import {
  decodeTrainerState,
  encodeTrainerState,
  nextSequence,
  optimizerFromSafetensors,
  optimizerToSafetensors,
  type TrainerState,
  TrainerStateError,
} from "./train_state.ts";
import { llamaParamLayout, parseLlamaConfig } from "../model/mod.ts";
import { chunkLayouts, type DistroState } from "../optimizer/mod.ts";

const STATE: TrainerState = {
  step: 5,
  optimizer: "distro",
  totalBatch: 4,
  sequenceLength: 16,
  data: { sequences: 7, shuffleSeed: 4, nextSequence: nextSequence(5, 4, 7) },
  lrSchedule: { kind: "Constant", baseLr: 1e-3, warmupSteps: 0, warmupInitLr: 0 },
  weightsDtype: "F32",
};

Deno.test("trainer_state.json round trips, and a bad field is named", () => {
  const text = encodeTrainerState(STATE);
  assert.deepEqual(decodeTrainerState(text), STATE);
  assert.equal(JSON.parse(text).data.next_sequence, 6);
  const bad = (patch: Record<string, unknown>, pattern: RegExp) =>
    assert.throws(
      () => decodeTrainerState(JSON.stringify({ ...JSON.parse(text), ...patch })),
      (e: unknown) => e instanceof TrainerStateError && pattern.test(e.message),
      pattern.source,
    );
  bad({ version: 2 }, /"version" is 2, this build reads version 1/);
  bad({ step: 0 }, /"step" must be an integer >= 1/);
  bad({ optimizer: "sgd" }, /"optimizer" must be "adamw" or "distro"/);
  bad(
    { data: { sequences: 7, shuffle_seed: 4, next_sequence: 0 } },
    /"data.next_sequence" is 0, but step 5 of 4 sequences over 7 ends at 6/,
  );
  bad({ weights_dtype: "F64" }, /"weights_dtype"/);
  bad({ micro_batch: 3 }, /"micro_batch" 3 does not divide "total_batch" 4/);
  bad({ micro_batch: 0 }, /"micro_batch" must be an integer >= 1/);
  assert.throws(() => decodeTrainerState("{"), /not JSON/);
});

Deno.test("trainer_state.json: micro_batch is written when known and optional when read", () => {
  const withMicro = { ...STATE, microBatch: 2 };
  const text = encodeTrainerState(withMicro);
  assert.equal(JSON.parse(text).micro_batch, 2);
  assert.deepEqual(decodeTrainerState(text), withMicro);
  // A checkpoint from before micro_batch was recorded still reads, without it.
  const { micro_batch: _, ...old } = JSON.parse(text);
  assert.equal(decodeTrainerState(JSON.stringify(old)).microBatch, undefined);
});

Deno.test("optimizer.safetensors: DisTrO per-parameter tensors round trip bit for bit", () => {
  const config = parseLlamaConfig({
    hidden_size: 32,
    intermediate_size: 48,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    vocab_size: 40,
    max_position_embeddings: 16,
    rms_norm_eps: 1e-6,
  });
  const layout = llamaParamLayout(config);
  const chunks = chunkLayouts(layout.entries, { chunk: 16, topk: 3 });
  const entries = chunks.reduce((a, c) => a + c.chunks * c.k, 0);
  const delta = new Float32Array(layout.totalSize);
  for (const e of layout.entries) {
    for (let i = 0; i < e.size; i++) delta[e.offset + i] = Math.sin(e.offset + i);
  }
  const state: DistroState = {
    kind: "distro",
    delta,
    own: {
      indices: Uint32Array.from({ length: entries }, (_, i) => i % 3),
      values: Float32Array.from({ length: entries }, (_, i) => i / 7),
    },
  };
  const file = optimizerToSafetensors(state, { layout, chunks });
  const back = optimizerFromSafetensors(file, { layout, chunks, kind: "distro", step: 5 });
  assert.deepEqual(back, state);
  assert.throws(
    () => optimizerFromSafetensors(file, { layout, kind: "adamw", step: 5 }),
    /holds the state of "distro", but this run uses --optimizer adamw/,
  );
  const own = file.tensors.get("model.norm.weight.own_indices")!;
  const outside = new Uint32Array(own.bytes.slice().buffer);
  const { totalk } = chunks[layout.entries.findIndex((e) => e.name === "model.norm.weight")];
  outside[2] = totalk;
  file.tensors.set("model.norm.weight.own_indices", {
    ...own,
    bytes: new Uint8Array(outside.buffer),
  });
  assert.throws(
    () => optimizerFromSafetensors(file, { layout, chunks, kind: "distro", step: 5 }),
    new RegExp(`tensor "model.norm.weight.own_indices" entry 2 is ${totalk}, not below ${totalk}`),
  );
  file.tensors.set("model.norm.weight.own_indices", own);
  file.tensors.set("extra", file.tensors.get("model.norm.weight.delta")!);
  assert.throws(
    () => optimizerFromSafetensors(file, { layout, chunks, kind: "distro", step: 5 }),
    /unexpected tensor "extra"/,
  );
});
