import assert from "node:assert/strict";
import fc from "fast-check";
import { contentHash } from "./content_store.ts";
import {
  BLOB_DTYPES,
  type BlobToShare,
  checkManifestSizes,
  decodeManifest,
  encodeManifest,
  fetchModel,
  MANIFEST_NAME,
  ManifestDecodeError,
  type ManifestEntry,
  ManifestSizeError,
  shareModel,
  spreadOverProviders,
} from "./model_share.ts";
import { createP2PNode } from "./node.ts";
import { PayloadService } from "./payload_service.ts";
import { PayloadFetchError } from "./fallback.ts";
import { testPublic, testSecret } from "../../client/testing/p2p.ts";

const arbEntry = fc.record({
  name: fc.string({ minLength: 1, maxLength: 64, unit: "binary" }),
  hash: fc.uint8Array({ minLength: 32, maxLength: 32 }).map(contentHash),
  size: fc.maxSafeNat(),
  dtype: fc.constantFrom(...BLOB_DTYPES),
}, { noNullPrototype: true });

const arbLabel = fc.record({
  step: fc.integer({ min: 0, max: 0xffff_ffff }),
  digest: fc.uint8Array({ minLength: 32, maxLength: 32 }),
}, { noNullPrototype: true });
const LABEL = { step: 7, digest: new Uint8Array(32).fill(7) };

Deno.test("manifests round-trip and every truncation is refused", () => {
  const entryList = fc.uniqueArray(arbEntry, { selector: (e) => e.name, maxLength: 6 });
  fc.assert(
    fc.property(entryList, arbLabel, (entries, label) => {
      const bytes = encodeManifest({ label, entries });
      assert.deepEqual(decodeManifest(bytes), { label, entries });
      for (let n = 0; n < bytes.length; n++) {
        assert.throws(() => decodeManifest(bytes.subarray(0, n)), ManifestDecodeError);
      }
    }),
    { numRuns: 50 },
  );
});

Deno.test("bad manifests are refused by name", () => {
  const entry = { name: "w", hash: contentHash(new Uint8Array(1)), size: 1, dtype: "f32" as const };
  const manifest = (entries: typeof entry[]) => ({ label: LABEL, entries });
  assert.throws(() => encodeManifest(manifest([entry, entry])), /entry "w" is listed twice/);
  assert.throws(() => encodeManifest(manifest([{ ...entry, name: "" }])), /name must be 1..256/);
  assert.throws(
    () => encodeManifest({ label: { step: -1, digest: LABEL.digest }, entries: [] }),
    /manifest step must be a u32/,
  );
  const bytes = encodeManifest(manifest([entry]));
  assert.throws(() => decodeManifest(Uint8Array.of(...bytes, 0)), /1 bytes after the last entry/);
  const badVersion = bytes.slice();
  badVersion[0] = 1;
  assert.throws(() => decodeManifest(badVersion), /at byte 0: version is 1, expected 3/);
  const twice = encodeManifest(manifest([entry, { ...entry, name: "x" }]));
  twice[41 + 2 + 1 + 41 + 2] = "w".charCodeAt(0); // rename x to w
  assert.throws(() => decodeManifest(twice), /entry "w" is listed twice/);
  const badDtype = bytes.slice();
  badDtype[41 + 2 + 1] = 3;
  assert.throws(() => decodeManifest(badDtype), /at byte 44: entry "w" dtype code 3 is unknown/);
  assert.throws(
    () => encodeManifest(manifest([{ ...entry, dtype: "f16" as unknown as "f32" }])),
    /dtype must be one of raw, f32, bf16, found f16/,
  );
});

Deno.test("the manifest hash covers each blob's dtype", () => {
  const entry = { name: "w", hash: contentHash(new Uint8Array(1)), size: 8, dtype: "f32" as const };
  const f32 = encodeManifest({ label: LABEL, entries: [entry] });
  const bf16 = encodeManifest({ label: LABEL, entries: [{ ...entry, dtype: "bf16" }] });
  assert.notEqual(contentHash(f32), contentHash(bf16));
  assert.equal(decodeManifest(bf16).entries[0].dtype, "bf16");
});

Deno.test("checkManifestSizes wants exactly the expected tensors at their sizes in their dtypes", () => {
  const hash = contentHash(new Uint8Array(1));
  const elements = new Map([["a", 10], ["b", 2]]);
  const entries: ManifestEntry[] = [
    { name: "a", hash, size: 40, dtype: "f32" },
    { name: "b", hash, size: 8, dtype: "f32" },
  ];
  checkManifestSizes(entries, elements);
  checkManifestSizes([entries[0], { ...entries[1], size: 4, dtype: "bf16" }], elements);
  const refused = (list: ManifestEntry[], blob: string, message: RegExp) =>
    assert.throws(
      () => checkManifestSizes(list, elements),
      (e) => e instanceof ManifestSizeError && e.blob === blob && message.test(e.message),
    );
  refused(
    [entries[0], { ...entries[1], size: 9 }],
    "b",
    /lists "b" at 9 bytes \(f32\), .* makes it 8/,
  );
  refused([entries[0], { ...entries[1], size: 2 ** 40 }], "b", /at 1099511627776 bytes/);
  // f32 bytes announced as bf16 would be twice the size the dtype allows.
  refused(
    [entries[0], { ...entries[1], dtype: "bf16" }],
    "b",
    /at 8 bytes \(bf16\), .* makes it 4/,
  );
  refused([entries[0], { ...entries[1], dtype: "raw" }], "b", /tensor "b" as raw, expected f32/);
  refused(
    [...entries, { name: "c", hash, size: 1, dtype: "f32" }],
    "c",
    /lists "c", not a blob of the model/,
  );
  refused([entries[0]], "b", /does not list "b"/);
});

Deno.test("a joiner fetches every tensor, verified and spread over the providers", async () => {
  const keys = [1, 2, 3].map(testPublic);
  const nodes = await Promise.all(
    [1, 2, 3].map((n) => createP2PNode({ secretKey: testSecret(n), allowedPeers: keys })),
  );
  try {
    const [a, b, c] = await Promise.all(
      // Tensors (5000+ bytes) move over the bulk path, the manifest in-band.
      nodes.map((node) =>
        PayloadService.start(node, {
          retry: { retries: 0 },
          bulk: { minBytes: 4096, bytesPerRttMs: 0 },
        })
      ),
    );
    for (const node of nodes.slice(1)) await node.connect(nodes[0].addresses()[0]);
    await nodes[2].connect(nodes[1].addresses()[0]);
    const shared: BlobToShare[] = Array.from(
      { length: 6 },
      (_, i) => [`layer.${i}.weight`, new Uint8Array(5000 + i * 2).fill(i), i % 2 ? "bf16" : "f32"],
    );
    const model = new Map(shared.map(([name, bytes]) => [name, bytes]));
    const manifestHash = shareModel(a, shared, LABEL);
    assert.equal(shareModel(b, shared, LABEL), manifestHash, "same model, same manifest");
    const fetched = await fetchModel(c, { providers: [keys[0], keys[1]] });
    assert.deepEqual(fetched.label, LABEL);
    assert.deepEqual(fetched.blobs, model);
    assert.deepEqual(
      fetched.entries.map((e) => [e.name, e.size, e.dtype]),
      shared.map(([name, bytes, dtype]) => [name, bytes.length, dtype]),
    );
    assert.ok(a.stats.served >= 3 && b.stats.served >= 3, "both providers served tensors");
    assert.equal(c.stats.bulkFetched, model.size, "every tensor came over the bulk path");
    assert.equal(a.stats.bulkServed + b.stats.bulkServed, model.size);
    // c now serves the model too.
    assert.equal(c.store.hashOfName(MANIFEST_NAME), manifestHash);
    // A pinned manifest that nobody has is refused rather than replaced by another.
    const other = contentHash(new Uint8Array(3));
    await assert.rejects(
      () => fetchModel(c, { providers: [keys[0]], manifestHash: other, reshare: false }),
      PayloadFetchError,
    );
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
  }
});

Deno.test("spreadOverProviders: the big blobs go to different providers, bytes evenly spread", () => {
  // A small model: config, embedding, 4 small tensors, head.
  const sizes = [700, 8_000_000, 1000, 1000, 1000, 1000, 8_000_000];
  assert.deepEqual(spreadOverProviders(sizes, [1, 1]), [0, 0, 0, 1, 0, 1, 1]);
  assert.deepEqual(spreadOverProviders(sizes, [1]), sizes.map(() => 0));
  assert.deepEqual(spreadOverProviders(sizes, []), sizes.map(() => 0));
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 1_000_000 }), { maxLength: 40 }),
    fc.integer({ min: 1, max: 8 }),
    (blobs, n) => {
      const starts = spreadOverProviders(blobs, new Array(n).fill(1));
      const load = new Array<number>(n).fill(0);
      starts.forEach((p, i) => load[p] += blobs[i]);
      // Greedy largest-first: no provider carries more than the fair share plus one blob.
      const fair = blobs.reduce((a, b) => a + b, 0) / n;
      const largest = Math.max(0, ...blobs);
      return starts.every((p) => p >= 0 && p < n) && Math.max(...load) <= fair + largest;
    },
  ));
});

Deno.test("spreadOverProviders: a provider twice as fast gets about twice the bytes", () => {
  const sizes = new Array(30).fill(1000);
  const starts = spreadOverProviders(sizes, [2, 1]);
  assert.equal(starts.filter((p) => p === 0).length, 20);
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 1_000_000 }), { maxLength: 40 }),
    fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 8 }),
    (blobs, weights) => {
      const starts = spreadOverProviders(blobs, weights);
      const load = new Array<number>(weights.length).fill(0);
      starts.forEach((p, i) => load[p] += blobs[i]);
      // Each pick is the soonest finish, at most the weighted mean of every provider's finish
      // with that blob added: no uplink is busy longer than (all bytes + n blobs) / all speed.
      const total = blobs.reduce((a, b) => a + b, 0);
      const largest = Math.max(0, ...blobs);
      const speed = weights.reduce((a, b) => a + b, 0);
      const bound = (total + weights.length * largest) / speed;
      return load.every((l, p) => l / weights[p] <= bound + 1e-9);
    },
  ));
});
