import assert from "node:assert/strict";
import { peersToDial } from "./bootstrap.ts";

const key = (n: number) => new Uint8Array(32).fill(n);
const everyone = [1, 2, 3, 4, 5, 6].map(key);
const first = () => 0; // always the first remaining candidate

Deno.test("dials up to target minus current neighbours, never ourselves or a neighbour", () => {
  const picked = peersToDial({
    participants: everyone,
    self: key(1),
    connected: [key(2)],
    reachable: () => true,
    randomIndex: first,
  });
  assert.deepEqual(picked, [key(3), key(4)]);
});

Deno.test("nothing to dial with enough neighbours; unreachable participants are skipped", () => {
  assert.deepEqual(
    peersToDial({
      participants: everyone,
      self: key(1),
      connected: [key(2), key(3), key(4)],
      reachable: () => true,
      randomIndex: first,
    }),
    [],
  );
  assert.deepEqual(
    peersToDial({
      participants: everyone,
      self: key(1),
      connected: [],
      reachable: (k) => k[0] % 2 === 0,
      randomIndex: first,
    }),
    [key(2), key(4), key(6)],
  );
});

Deno.test("the choice follows the injected randomness and is a sample without repeats", () => {
  const last = (n: number) => n - 1;
  const picked = peersToDial({
    participants: [...everyone, key(6)],
    self: key(1),
    connected: [],
    reachable: () => true,
    target: 5,
    randomIndex: last,
  });
  assert.equal(new Set(picked.map((k) => k[0])).size, 5);
  assert.deepEqual(picked.map((k) => k[0]), [6, 2, 3, 4, 5]); // Fisher-Yates, always the last pick
  assert.throws(
    () =>
      peersToDial({
        participants: [],
        self: key(1),
        connected: [],
        reachable: () => true,
        target: -1,
        randomIndex: first,
      }),
    /target must be a non-negative integer, found -1/,
  );
});
