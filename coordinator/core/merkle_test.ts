import assert from "node:assert/strict";
import fc from "fast-check";
import { sha256 } from "./hash.ts";
import {
  EMPTY_MERKLE_ROOT,
  merkleLeafHash,
  merkleNodeHash,
  merkleProof,
  merkleRoot,
  verifyMerkleProof,
} from "./merkle.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const WORDS = [
  "my",
  "very",
  "eager",
  "mother",
  "just",
  "served",
  "us",
  "nine",
  "pizzas",
  "make",
  "prime",
]
  .map(enc);
const BAD = ["bad", "missing", "false"].map(enc);

Deno.test("leaf and node hashes carry their domain prefixes", () => {
  assert.deepEqual(merkleLeafHash(enc("test")), sha256(Uint8Array.of(0), enc("test")));
  const l = sha256(enc("l"));
  const r = sha256(enc("r"));
  assert.deepEqual(merkleNodeHash(l, r), sha256(Uint8Array.of(1), l, r));
});

Deno.test("root vectors for 0, 1, 2 and 3 leaves", () => {
  const [a, b, c] = [enc("a"), enc("b"), enc("c")];
  const la = sha256(Uint8Array.of(0), a);
  const lb = sha256(Uint8Array.of(0), b);
  const lc = sha256(Uint8Array.of(0), c);
  const node = (l: Uint8Array, r: Uint8Array) => sha256(Uint8Array.of(1), l, r);
  assert.deepEqual(merkleRoot([]), new Uint8Array(32));
  assert.deepEqual(merkleRoot([]), EMPTY_MERKLE_ROOT);
  assert.deepEqual(merkleRoot([a]), la);
  assert.deepEqual(merkleRoot([a, b]), node(la, lb));
  // Three leaves: c is paired with itself.
  assert.deepEqual(merkleRoot([a, b, c]), node(node(la, lb), node(lc, lc)));
  // Five leaves: the odd node is duplicated at two levels.
  const [d, e] = [enc("d"), enc("e")];
  const ld = sha256(Uint8Array.of(0), d);
  const le = sha256(Uint8Array.of(0), e);
  const left = node(node(la, lb), node(lc, ld));
  const right = node(node(le, le), node(le, le));
  assert.deepEqual(merkleRoot([a, b, c, d, e]), node(left, right));
});

Deno.test("the root depends on order and content", () => {
  assert.notDeepEqual(merkleRoot([enc("a"), enc("b")]), merkleRoot([enc("b"), enc("a")]));
  assert.notDeepEqual(merkleRoot([enc("a")]), merkleRoot([enc("a"), enc("a")]));
});

Deno.test("every proof of an 11-leaf tree verifies; bad items fail", () => {
  const root = merkleRoot(WORDS);
  for (let i = 0; i < WORDS.length; i++) {
    const proof = merkleProof(WORDS, i);
    assert.equal(proof.siblings.length, 4); // 11 → 6 → 3 → 2 → 1
    assert.ok(verifyMerkleProof(root, WORDS[i], proof));
  }
  for (let i = 0; i < BAD.length; i++) {
    assert.ok(!verifyMerkleProof(root, BAD[i], merkleProof(WORDS, i)));
  }
  assert.throws(() => merkleProof(WORDS, WORDS.length), RangeError);
  assert.throws(() => merkleProof([], 0), RangeError);
});

Deno.test("tampered proofs fail", () => {
  const root = merkleRoot(WORDS);
  const proof = merkleProof(WORDS, 3);
  const flipped = proof.siblings.map((s, k) => {
    const t = s.slice();
    if (k === 2) t[0] ^= 1;
    return t;
  });
  assert.ok(!verifyMerkleProof(root, WORDS[3], { ...proof, siblings: flipped }));
  assert.ok(!verifyMerkleProof(root, WORDS[3], { ...proof, index: 2 }));
  assert.ok(!verifyMerkleProof(root, WORDS[3], { ...proof, leafCount: 17 }));
  assert.ok(!verifyMerkleProof(root, WORDS[3], { ...proof, siblings: proof.siblings.slice(1) }));
  const otherRoot = root.slice();
  otherRoot[31] ^= 0x80;
  assert.ok(!verifyMerkleProof(otherRoot, WORDS[3], proof));
});

Deno.test("a duplicated last leaf cannot be claimed at a position past the stated count", () => {
  // Leaf 10 of 11 is paired with itself; claiming its phantom twin at index 11 must fail.
  const root = merkleRoot(WORDS);
  const proof = merkleProof(WORDS, 10);
  assert.ok(verifyMerkleProof(root, WORDS[10], proof));
  assert.ok(!verifyMerkleProof(root, WORDS[10], { ...proof, index: 11 }));
});

Deno.test("known limit: the root does not commit to the leaf count", () => {
  // Duplicating an odd last leaf gives the same root (the CVE-2012-2459 mutation), so a
  // verifier must take leafCount from a trusted source, as the docs say.
  assert.deepEqual(merkleRoot([...WORDS, WORDS[10]]), merkleRoot(WORDS));
  const lying = { ...merkleProof(WORDS, 10), index: 11, leafCount: 12 };
  assert.ok(verifyMerkleProof(merkleRoot(WORDS), WORDS[10], lying));
});

Deno.test("property: proofs verify for every leaf of random trees", () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ maxLength: 12 }), { minLength: 1, maxLength: 40 }),
      fc.nat(),
      (leaves, pick) => {
        const i = pick % leaves.length;
        const root = merkleRoot(leaves);
        assert.ok(verifyMerkleProof(root, leaves[i], merkleProof(leaves, i)));
      },
    ),
    { numRuns: 100 },
  );
});
