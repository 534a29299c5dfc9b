import assert from "node:assert/strict";
import fc from "fast-check";
import { agreeOnManifest, ManifestDisagreementError } from "./quorum.ts";

const H = (c: string) => c.repeat(64);

Deno.test("the manifest of a strict majority of answering peers wins", () => {
  const agreed = agreeOnManifest([
    { peer: "p1", hash: H("b") },
    { peer: "p2", hash: H("a") },
    { peer: "p3", hash: H("a") },
  ]);
  assert.equal(agreed.hash, H("a"));
  assert.deepEqual(agreed.supporters, ["p2", "p3"]);
  assert.deepEqual(agreed.dissenters, ["p1"]);
  assert.equal(agreeOnManifest([{ peer: "only", hash: H("c") }]).hash, H("c"));
});

Deno.test("ties, no answers and too few supporters are refused", () => {
  assert.throws(
    () => agreeOnManifest([{ peer: "p1", hash: H("a") }, { peer: "p2", hash: H("b") }]),
    /no model manifest is served by a majority of the 2 answering peers/,
  );
  assert.throws(() => agreeOnManifest([]), ManifestDisagreementError);
  assert.throws(
    () => agreeOnManifest([{ peer: "p1", hash: H("a") }], { minSupporters: 2 }),
    /served by 1 peers, at least 2 required/,
  );
  assert.throws(() => agreeOnManifest([], { minSupporters: 0 }), RangeError);
});

Deno.test("a peer repeating itself votes once", () => {
  const liar = { peer: "liar", hash: H("f") };
  assert.throws(
    () => agreeOnManifest([liar, liar, liar, { peer: "honest", hash: H("a") }]),
    ManifestDisagreementError,
  );
});

Deno.test("liars in a minority never get their manifest accepted", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 9 }),
      fc.array(fc.constantFrom("b", "c", "d"), { maxLength: 8 }),
      fc.integer(),
      (honest, lies, seed) => {
        fc.pre(lies.length < honest);
        const reports = [
          ...Array.from({ length: honest }, (_, i) => ({ peer: `h${i}`, hash: H("a") })),
          ...lies.map((c, i) => ({ peer: `l${i}`, hash: H(c) })),
        ];
        // Any arrival order.
        const shuffled = reports.map((r, i) => ({ r, k: (i * 7919 + seed) % 101 }))
          .sort((x, y) => x.k - y.k).map((x) => x.r);
        const agreed = agreeOnManifest(shuffled);
        assert.equal(agreed.hash, H("a"));
        assert.equal(agreed.supporters.length, honest);
      },
    ),
  );
});
