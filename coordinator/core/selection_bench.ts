/**
 * Speed of one round's selection work at 32, 256, 1024 and 10,000 clients:
 * building the CommitteeSelection (each of its two swap-or-not shuffles of all clients is
 * computed on first use, so witness-only work pays for one), assigning
 * data, and filling plus querying a witness participant bloom sized for the client count.
 *
 * Run: `deno bench -A coordinator/core/selection_bench.ts`
 */

import { bloomAdd, bloomContains, createBloom, witnessBloomParameters } from "./bloom.ts";
import { CommitteeSelection } from "./committee_selection.ts";
import { assignDataForRound } from "./data_selection.ts";
import { sha256, u64le } from "./hash.ts";

const SIZES = [32, 256, 1024, 10_000];
const SEED = 0x1234_5678_9abc_def0n;

function selection(n: number): CommitteeSelection {
  return CommitteeSelection.create({
    tieBreakerNodes: 0,
    verificationPercent: 0,
    witnessNodes: 0,
    totalNodes: n,
    randomSeed: SEED,
  });
}

for (const n of SIZES) {
  const cs = selection(n);
  const ids = Array.from({ length: n }, (_, i) => sha256(u64le(BigInt(i))));
  const { numBits, numKeys } = witnessBloomParameters(n);
  const keys = BigUint64Array.from(
    { length: numKeys },
    (_, i) => 0x9e3779b97f4a7c15n * BigInt(i + 1),
  );

  Deno.bench({
    name: `CommitteeSelection.create + every proof, ${n} clients`,
    group: `selection ${n}`,
    baseline: true,
    fn: () => {
      const s = selection(n);
      s.committeeProof(0);
      s.witnessProof(0);
    },
  });

  Deno.bench({
    name: `CommitteeSelection.create + witness proofs only, ${n} clients`,
    group: `selection ${n}`,
    fn: () => {
      selection(n).witnessProof(0);
    },
  });

  Deno.bench({
    name: `assignDataForRound, ${n} clients, batch ${4 * n}`,
    group: `selection ${n}`,
    fn: () => {
      assignDataForRound({
        clientsLen: n,
        selection: cs,
        dataIndex: 0,
        batchSize: 4 * n,
        randomSeed: SEED,
      });
    },
  });

  Deno.bench({
    name: `bloom add ${n} + contains ${n} (${numBits} bits, ${numKeys} keys)`,
    group: `selection ${n}`,
    fn: () => {
      const bloom = createBloom(numBits, keys);
      for (const id of ids) bloomAdd(bloom, id);
      for (const id of ids) if (!bloomContains(bloom, id)) throw new Error("false negative");
    },
  });
}
