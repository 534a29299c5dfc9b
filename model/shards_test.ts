import assert from "node:assert/strict";
import {
  checkShardIndex,
  formatShardIndex,
  parseByteSize,
  parseShardIndex,
  planShards,
  shardFileName,
  type ShardIndex,
} from "./shards.ts";
import { SafetensorsError, type SafetensorsHeader } from "./safetensors.ts";

Deno.test("parseByteSize reads HF's max_shard_size strings", () => {
  assert.equal(parseByteSize("5GB"), 5_000_000_000);
  assert.equal(parseByteSize("500MB"), 500_000_000);
  assert.equal(parseByteSize("2GiB"), 2 ** 31);
  assert.equal(parseByteSize("64kib"), 65536);
  assert.equal(parseByteSize("1.5GB"), 1_500_000_000);
  assert.equal(parseByteSize("4096"), 4096);
  for (const bad of ["", "0", "-1GB", "5XB", "GB", "1e3"]) {
    assert.throws(() => parseByteSize(bad), RangeError, bad);
  }
});

Deno.test("shard names are HF's, 1-based and zero-padded to five digits", () => {
  assert.equal(shardFileName(1, 2), "model-00001-of-00002.safetensors");
  assert.equal(shardFileName(12, 345), "model-00012-of-00345.safetensors");
});

Deno.test("planShards splits as huggingface_hub does", () => {
  const t = (name: string, bytes: number) => ({ name, bytes });
  // Fill to the limit; the tensor that would overflow starts the next shard.
  assert.deepEqual(planShards([t("a", 40), t("b", 60), t("c", 1)], 100), [["a", "b"], ["c"]]);
  // A tensor over the limit gets a shard of its own at once, ahead of the open shard.
  assert.deepEqual(planShards([t("a", 10), t("big", 250), t("b", 10)], 100), [
    ["big"],
    ["a", "b"],
  ]);
  assert.deepEqual(planShards([t("a", 10)], 2_000_000_000), [["a"]]);
  assert.throws(() => planShards([t("a", 1)], 0), RangeError);
});

Deno.test("formatShardIndex writes save_pretrained's JSON byte for byte", () => {
  const text = formatShardIndex({
    weightMap: new Map([
      ["model.norm.weight", "model-00002-of-00002.safetensors"],
      ["lm_head.weight", "model-00002-of-00002.safetensors"],
      ["model.embed_tokens.weight", "model-00001-of-00002.safetensors"],
    ]),
    totalSize: 1234,
  });
  // What `json.dumps(index, indent=2, sort_keys=True) + "\n"` prints for the same index.
  assert.equal(
    text,
    `{
  "metadata": {
    "total_size": 1234
  },
  "weight_map": {
    "lm_head.weight": "model-00002-of-00002.safetensors",
    "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
    "model.norm.weight": "model-00002-of-00002.safetensors"
  }
}
`,
  );
  const back = parseShardIndex(JSON.parse(text));
  assert.equal(back.totalSize, 1234);
  assert.equal(back.weightMap.get("lm_head.weight"), "model-00002-of-00002.safetensors");
});

Deno.test("parseShardIndex rejects malformed indexes naming what is wrong", () => {
  const map = { weight_map: { a: "model-00001-of-00001.safetensors" } };
  assert.equal(parseShardIndex(map).totalSize, null);
  const cases: [unknown, RegExp][] = [
    [[], /not a JSON object/],
    [{}, /"weight_map" is not an object/],
    [{ weight_map: {} }, /names no tensor/],
    [{ weight_map: { a: "../x.safetensors" } }, /tensor "a" maps to "..\/x.safetensors"/],
    [{ weight_map: { a: "x.bin" } }, /tensor "a" maps/],
    [{ weight_map: { a: 3 } }, /tensor "a" maps to 3/],
    [{ ...map, metadata: { total_size: "12" } }, /"metadata.total_size" must be a byte count/],
    [{ ...map, metadata: { total_size: -1 } }, /"metadata.total_size"/],
    [{ ...map, metadata: [] }, /"metadata" is not an object/],
  ];
  for (const [raw, re] of cases) {
    assert.throws(() => parseShardIndex(raw, "dir/idx.json"), (e: unknown) => {
      assert.ok(e instanceof SafetensorsError);
      assert.match(e.message, /^Cannot load "dir\/idx.json": /);
      assert.match(e.message, re);
      return true;
    });
  }
});

/** A header holding `tensors` (name → shape) as F32, laid end to end. */
function header(tensors: Record<string, number[]>): SafetensorsHeader {
  const out = new Map();
  let pos = 0;
  for (const [name, shape] of Object.entries(tensors)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    out.set(name, { dtype: "F32", shape, begin: pos, end: pos + bytes });
    pos += bytes;
  }
  return { tensors: out, metadata: null, dataStart: 64, dataBytes: pos };
}

Deno.test("checkShardIndex checks the index against the shards' headers", () => {
  const S1 = "model-00001-of-00002.safetensors", S2 = "model-00002-of-00002.safetensors";
  const expected = [{ name: "a", shape: [2, 3] }, { name: "b", shape: [4] }];
  const index: ShardIndex = { weightMap: new Map([["a", S1], ["b", S2]]), totalSize: 40 };
  const good = new Map([[S1, header({ a: [2, 3] })], [S2, header({ b: [4] })]]);
  checkShardIndex(index, good, { expected, dir: "m" });
  // total_size as the sum of file sizes (some hand-written indexes) is accepted too.
  checkShardIndex({ ...index, totalSize: 64 + 24 + 64 + 16 }, good, { expected });
  const fails = (
    idx: ShardIndex,
    headers: Map<string, SafetensorsHeader>,
    tensor: string | null,
    re: RegExp,
  ) =>
    assert.throws(
      () => checkShardIndex(idx, headers, { expected, dir: "m", ignored: /^skip$/ }),
      (e: unknown) => e instanceof SafetensorsError && e.tensor === tensor && re.test(e.message),
      re.source,
    );
  fails(
    { ...index, totalSize: 41 },
    good,
    null,
    /"m\/model.safetensors.index.json": "metadata.total_size" is 41, but the shards' tensors hold 40/,
  );
  fails(
    { ...index, weightMap: new Map([["b", S2]]) },
    new Map([[S2, header({ b: [4] })]]),
    "a",
    /tensor "a" is missing from "weight_map"/,
  );
  fails(
    index,
    new Map([[S1, header({ a: [2, 3] })], [S2, header({ b: [4], a: [2, 3] })]]),
    "a",
    new RegExp(`"m/${S2}": tensor "a" is also stored here, but .* assigns it to "${S1}"`),
  );
  fails(
    index,
    new Map([[S1, header({ a: [2, 3], c: [1] })], [S2, header({ b: [4] })]]),
    "c",
    /tensor "c" is not listed in model.safetensors.index.json/,
  );
  fails(
    index,
    new Map([[S1, header({})], [S2, header({ b: [4] })]]),
    "a",
    new RegExp(`"m/${S1}": tensor "a" is missing \\(`),
  );
  fails(
    index,
    new Map([[S1, header({ a: [3, 2] })], [S2, header({ b: [4] })]]),
    "a",
    /tensor "a" has shape \[3, 2\], expected \[2, 3\]/,
  );
  fails(
    { weightMap: new Map([...index.weightMap, ["z", S2]]), totalSize: null },
    new Map([[S1, header({ a: [2, 3] })], [S2, header({ b: [4], z: [1] })]]),
    "z",
    /unexpected tensor "z"/,
  );
  // Ignored buffers (rotary inv_freq) may be present.
  checkShardIndex(
    { weightMap: new Map([...index.weightMap, ["skip", S2]]), totalSize: null },
    new Map([[S1, header({ a: [2, 3] })], [S2, header({ b: [4], skip: [1] })]]),
    { expected, ignored: /^skip$/ },
  );
});
