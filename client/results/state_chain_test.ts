import assert from "node:assert/strict";
import { StateChain } from "./state_chain.ts";
import { toHex } from "../../common/mod.ts";
import { chunkLayout, stateDigest, zeroStateDigest } from "../../optimizer/mod.ts";
import { createHash } from "node:crypto";

const shape = { size: 64, layouts: [chunkLayout("w", [8, 8], { chunk: 4, topk: 2 })] };

function serving() {
  const store = new Map<string, Uint8Array>();
  return {
    store,
    provide(bytes: Uint8Array) {
      const hex = createHash("sha256").update(bytes).digest("hex");
      store.set(hex, bytes);
      return hex;
    },
    forget(hashes: Iterable<string>) {
      let n = 0;
      for (const h of hashes) if (store.delete(h)) n++;
      return n;
    },
  };
}

Deno.test("a chain starts at zero, names each step's input and output, and serves its states", () => {
  const s = serving();
  const chain = new StateChain(shape, s);
  assert.deepEqual(chain.current, zeroStateDigest(shape));
  const a = new Uint8Array([1, 2, 3]), b = new Uint8Array([4, 5]), c = new Uint8Array([6]);
  const r0 = chain.advance(a, 0);
  assert.deepEqual(r0, { input: zeroStateDigest(shape), output: stateDigest(a) });
  const r1 = chain.advance(b, 1);
  assert.deepEqual(r1.input, r0.output, "each input is the previous output");
  chain.advance(c, 2);
  assert.equal(s.store.size, 3);
  // Rounds 1 and 2 are recent: a (round 1's input), b and c (current) stay.
  assert.equal(chain.retain([1, 2]), 0);
  // Only round 2 now: a is no longer named.
  assert.equal(chain.retain([2]), 1);
  assert.deepEqual(chain.served, [toHex(stateDigest(b)), toHex(stateDigest(c))].sort());
  chain.reset();
  assert.deepEqual(chain.current, chain.zero);
  assert.equal(chain.retain([]), 2);
  assert.equal(s.store.size, 0);
});
