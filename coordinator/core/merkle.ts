/**
 * Binary SHA-256 Merkle trees over byte strings, as Psyche's `merkle_tree.rs`
 * (itself Solana's): leaves are `sha256(0x00 || item)`, inner nodes
 * `sha256(0x01 || left || right)` (the prefixes stop second-preimage tricks that pass an
 * inner node off as a leaf), and at every level an odd last node is paired with itself.
 *
 * A witness commits to the broadcasts it received with one root (`Witness.broadcastMerkle`).
 * The root of no leaves is defined as 32 zero bytes ({@linkcode EMPTY_MERKLE_ROOT}):
 * Psyche has no root there (`None`), but the state stores a fixed 32 bytes, and no
 * non-empty tree hashes to zeros.
 *
 * Known limit of the odd-node duplication (the CVE-2012-2459 mutation): a list whose
 * odd last leaf is repeated has the same root as the list without the repeat, so the root
 * does not commit to the leaf count. Verifiers must take `leafCount` from a trusted source
 * (for broadcast roots: the number of batches of the round), never from the prover alone.
 *
 * @module
 */

import { sha256 } from "./hash.ts";
import { equalBytes } from "../../common/mod.ts";

/** Root of a tree with no leaves: 32 zero bytes. */
export const EMPTY_MERKLE_ROOT: Uint8Array = new Uint8Array(32);

const LEAF_PREFIX = Uint8Array.of(0);
const NODE_PREFIX = Uint8Array.of(1);

/** `sha256(0x00 || item)`. */
export function merkleLeafHash(item: Uint8Array): Uint8Array {
  return sha256(LEAF_PREFIX, item);
}

/** `sha256(0x01 || left || right)`. */
export function merkleNodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return sha256(NODE_PREFIX, left, right);
}

/** Hashes one level into the next, duplicating an odd last node. */
function nextLevel(level: Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < level.length; i += 2) {
    out.push(merkleNodeHash(level[i], level[i + 1] ?? level[i]));
  }
  return out;
}

/**
 * Root of the tree over `leaves` (items, hashed here with the leaf prefix).
 * One leaf: its leaf hash. No leaves: {@linkcode EMPTY_MERKLE_ROOT}.
 *
 * @example
 * ```ts
 * import { merkleLeafHash, merkleNodeHash, merkleRoot } from "./merkle.ts";
 * const [a, b] = [Uint8Array.of(1), Uint8Array.of(2)];
 * const root = merkleRoot([a, b]);
 * const expected = merkleNodeHash(merkleLeafHash(a), merkleLeafHash(b));
 * if (root.join() !== expected.join()) throw new Error("two leaves hash pairwise");
 * ```
 */
export function merkleRoot(leaves: readonly Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return EMPTY_MERKLE_ROOT.slice();
  let level = leaves.map(merkleLeafHash);
  while (level.length > 1) level = nextLevel(level);
  return level[0];
}

/**
 * Proof that the leaf at `index` is in a tree of `leafCount` leaves: the sibling at
 * every level from the leaves up (a node paired with itself has itself as sibling).
 */
export interface MerkleProof {
  index: number;
  leafCount: number;
  siblings: Uint8Array[];
}

/** Levels above the leaves in a tree of `leafCount` (>= 1) leaves. */
function depthOf(leafCount: number): number {
  let depth = 0;
  for (let n = leafCount; n > 1; n = Math.ceil(n / 2)) depth++;
  return depth;
}

/** The proof for `leaves[index]`. Throws RangeError when `index` is not a leaf. */
export function merkleProof(leaves: readonly Uint8Array[], index: number): MerkleProof {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length) {
    throw new RangeError(`Merkle leaf index must be in [0, ${leaves.length}), found ${index}`);
  }
  let level = leaves.map(merkleLeafHash);
  const siblings: Uint8Array[] = [];
  let i = index;
  while (level.length > 1) {
    const sibling = i % 2 === 0 ? (level[i + 1] ?? level[i]) : level[i - 1];
    siblings.push(sibling);
    level = nextLevel(level);
    i = Math.floor(i / 2);
  }
  return { index, leafCount: leaves.length, siblings };
}

/**
 * True iff `proof` shows `item` at `proof.index` of a `proof.leafCount`-leaf tree with
 * `root`. The shape is checked too (index in range, one sibling per level, a node paired
 * with itself exactly where the tree duplicates), so a proof binds the item to one
 * position. Malformed proofs are false, never exceptions.
 */
export function verifyMerkleProof(root: Uint8Array, item: Uint8Array, proof: MerkleProof): boolean {
  const { index, leafCount, siblings } = proof;
  if (!Number.isSafeInteger(leafCount) || leafCount < 1) return false;
  if (!Number.isSafeInteger(index) || index < 0 || index >= leafCount) return false;
  if (!Array.isArray(siblings) || siblings.length !== depthOf(leafCount)) return false;
  let node = merkleLeafHash(item);
  let i = index;
  let levelLen = leafCount;
  for (const sibling of siblings) {
    if (!(sibling instanceof Uint8Array) || sibling.length !== 32) return false;
    if (i % 2 === 0) {
      const duplicated = i + 1 >= levelLen;
      if (duplicated && !equalBytes(sibling, node)) return false;
      node = merkleNodeHash(node, sibling);
    } else {
      node = merkleNodeHash(sibling, node);
    }
    i = Math.floor(i / 2);
    levelLen = Math.ceil(levelLen / 2);
  }
  return equalBytes(node, root);
}
