/**
 * What a client has heard about one round: the training results announced for it (who
 * trained which batch, with which commitment and payload), which payloads it downloaded and
 * verified, and who announced Finished. From these it builds the round's witness report:
 * the participant bloom (`sha256(signer)` of every trainer whose payload verified), the
 * broadcast bloom (the commitment of the first verified payload per batch) and the Merkle
 * root of every accepted commitment.
 *
 * Every announcement is judged here before anything is fetched, as Psyche's
 * `apply_message` does: the step must be this round's, the sender a client of the round,
 * its committee proof its own and a trainer's, and the batch the one assigned to it.
 * Signatures were already checked by the gossip layer; payload bytes are checked against the
 * signed commitment by the caller before {@link RoundTracker.recordVerified}.
 *
 * Pure: bloom keys are passed in (the caller draws them at random), no clock, no I/O.
 *
 * @module
 */
import type { FinishedAnnouncement, TrainingResultAnnouncement } from "../p2p/announcement.ts";
import { indexOfPeer, type RoundView } from "../round_view.ts";
import { type BatchId, equalBytes, type PublicKeyBytes, toHex } from "../../common/mod.ts";
import {
  type Bloom,
  bloomAdd,
  type BloomParameters,
  createBloom,
  merkleRoot,
  sha256,
  type Witness,
  witnessBloomParameters,
  type WitnessProof,
} from "../../coordinator/core/mod.ts";
import type { DistroResult } from "../../optimizer/mod.ts";
import { stragglerDeadline } from "./straggler_wait.ts";

/** Why an announcement was refused. */
export type RefusalReason =
  | "WrongStep"
  | "UnknownSender"
  | "BadProof"
  | "NotTrainer"
  | "WrongBatch"
  | "Equivocation"
  | "Duplicate"
  | "WarmupFlag";

/** An announcement's fate: accepted, or refused with a reason and a sentence for the logs. */
export type Verdict =
  | { readonly accepted: true }
  | { readonly accepted: false; readonly reason: RefusalReason; readonly detail: string };

/** An accepted training-result announcement: what to fetch and what it must match. */
export interface AnnouncedResult {
  readonly batch: BatchId;
  /** p2p key of the trainer (the announcement's verified sender). */
  readonly from: PublicKeyBytes;
  /** The trainer's signer key (what the participant bloom records). */
  readonly signer: PublicKeyBytes;
  /** Commitment hash (what the broadcast bloom and consensus use). */
  readonly commitment: Uint8Array;
  /** sha256 of the payload bytes. */
  readonly contentHash: Uint8Array;
  readonly payloadSize: number;
}

/** Bloom geometry and the keys this client hashes with this round. */
export interface BloomSetup {
  readonly parameters: BloomParameters;
  /** Keys of the participant bloom (`parameters.numKeys` of them). */
  readonly participantKeys: BigUint64Array;
  /** Keys of the broadcast bloom. */
  readonly broadcastKeys: BigUint64Array;
}

/**
 * The bloom geometry of a run with `maxClients` clients, and fresh keys for both blooms drawn
 * from `nextU64` (the edge's randomness): participant keys first, then broadcast keys.
 */
export function bloomSetup(maxClients: number, nextU64: () => bigint): BloomSetup {
  const parameters = witnessBloomParameters(maxClients);
  const keys = () => BigUint64Array.from({ length: parameters.numKeys }, nextU64);
  return { parameters, participantKeys: keys(), broadcastKeys: keys() };
}

const accepted: Verdict = { accepted: true };

function refuse(reason: RefusalReason, detail: string): Verdict {
  return { accepted: false, reason, detail };
}

function batchKey(batch: BatchId): string {
  return `${batch.start}-${batch.end}`;
}

/** Everything a client knows about one round's results. */
export class RoundTracker {
  /** The round this tracker is about. */
  readonly view: RoundView;
  readonly #blooms: BloomSetup;
  /** Accepted announcements by commitment hex, in arrival order. */
  readonly #announced = new Map<string, AnnouncedResult>();
  /** Decoded, verified results by commitment hex. */
  readonly #verified = new Map<string, DistroResult>();
  /** Commitment hex whose download failed for good. */
  readonly #failed = new Set<string>();
  /** When each download settled, verified or failed (ms, by commitment hex). */
  readonly #settledAt = new Map<string, number>();
  /** p2p keys (hex) that announced Finished for this round, with when it arrived (ms). */
  readonly #finished = new Map<string, number>();
  /** When this client saw the round begin (ms, the caller's clock). */
  readonly #seenAtMs: number;

  /** `seenAtMs`: when this client saw the round begin, on the clock `acceptFinished` gets. */
  constructor(view: RoundView, blooms: BloomSetup, seenAtMs = 0) {
    this.view = view;
    this.#blooms = blooms;
    this.#seenAtMs = seenAtMs;
  }

  /**
   * Judges a TrainingResult announcement from `from` (its verified sender) and records it
   * when valid. A trainer announcing a second, different commitment for its batch is refused
   * (`Equivocation`): only its first counts. A resend of an accepted one is `Duplicate`.
   */
  acceptResult(from: PublicKeyBytes, message: TrainingResultAnnouncement): Verdict {
    const view = this.view;
    if (message.step !== view.step) {
      return refuse("WrongStep", `result for step ${message.step}, this round is ${view.step}`);
    }
    const index = indexOfPeer(view, from);
    if (index < 0) return refuse("UnknownSender", "sender is not a client of this round");
    const proof = message.proof;
    if (proof.index !== index || !view.selection.verifyCommittee(proof)) {
      return refuse("BadProof", `committee proof (index ${proof.index}) is not client ${index}'s`);
    }
    if (proof.committee !== "Trainer") {
      return refuse("NotTrainer", `client ${index} is a ${proof.committee}, not a trainer`);
    }
    const assigned = view.assignments.find((a) => a.clientIndex === index);
    if (
      assigned === undefined || assigned.batch.start !== message.batch.start ||
      assigned.batch.end !== message.batch.end
    ) {
      return refuse(
        "WrongBatch",
        `client ${index} announced batch [${message.batch.start}, ${message.batch.end}], ` +
          (assigned
            ? `assigned [${assigned.batch.start}, ${assigned.batch.end}]`
            : "assigned none"),
      );
    }
    const key = toHex(message.commitment);
    if (this.#announced.has(key)) return refuse("Duplicate", "commitment already announced");
    for (const a of this.#announced.values()) {
      if (equalBytes(a.from, from) && batchKey(a.batch) === batchKey(message.batch)) {
        return refuse("Equivocation", `client ${index} already announced another commitment`);
      }
    }
    this.#announced.set(key, {
      batch: { ...message.batch },
      from: from.slice(),
      signer: view.clients[index].id.signer,
      commitment: message.commitment.slice(),
      contentHash: message.contentHash.slice(),
      payloadSize: message.payloadSize,
    });
    return accepted;
  }

  /**
   * Records that `from` finished this round. Refuses other steps, outsiders, proofs that are
   * not the sender's, and warmup flags.
   */
  acceptFinished(from: PublicKeyBytes, message: FinishedAnnouncement, atMs = 0): Verdict {
    if (message.warmup) return refuse("WarmupFlag", "a warmup Finished is not about a round");
    if (message.step !== this.view.step) {
      return refuse(
        "WrongStep",
        `Finished for step ${message.step}, this round is ${this.view.step}`,
      );
    }
    const index = indexOfPeer(this.view, from);
    if (index < 0) return refuse("UnknownSender", "sender is not a client of this round");
    const proof = message.proof;
    if (proof.index !== index || !this.view.selection.verifyCommittee(proof)) {
      return refuse("BadProof", `committee proof (index ${proof.index}) is not client ${index}'s`);
    }
    const key = toHex(from);
    if (this.#finished.has(key)) return refuse("Duplicate", "already finished");
    this.#finished.set(key, atMs);
    return accepted;
  }

  /** The accepted announcement with this commitment, if any. */
  announced(commitment: Uint8Array): AnnouncedResult | undefined {
    return this.#announced.get(toHex(commitment));
  }

  /** Every accepted announcement, in arrival order. */
  announcements(): AnnouncedResult[] {
    return [...this.#announced.values()];
  }

  /**
   * Records a payload whose bytes matched its signed commitment and decoded for this model.
   * Throws RangeError for a commitment never accepted, or a result for another batch or step.
   */
  recordVerified(commitment: Uint8Array, result: DistroResult, atMs = 0): void {
    const key = toHex(commitment);
    const a = this.#announced.get(key);
    if (a === undefined) throw new RangeError(`no accepted announcement for commitment ${key}`);
    if (
      result.step !== this.view.step || result.batch.start !== a.batch.start ||
      result.batch.end !== a.batch.end
    ) {
      throw new RangeError(
        `result for step ${result.step} batch [${result.batch.start}, ${result.batch.end}] does ` +
          `not match its announcement (step ${this.view.step}, [${a.batch.start}, ${a.batch.end}])`,
      );
    }
    this.#verified.set(key, result);
    if (!this.#settledAt.has(key)) this.#settledAt.set(key, atMs);
  }

  /** Records that a payload could not be fetched or did not verify (it will not be retried). */
  recordFailed(commitment: Uint8Array, atMs = 0): void {
    const key = toHex(commitment);
    this.#failed.add(key);
    if (!this.#settledAt.has(key)) this.#settledAt.set(key, atMs);
  }

  /** The verified result for a commitment, if downloaded. */
  result(commitment: Uint8Array): DistroResult | undefined {
    return this.#verified.get(toHex(commitment));
  }

  /** Whether every accepted announcement was downloaded or given up on. */
  downloadsSettled(): boolean {
    for (const key of this.#announced.keys()) {
      if (!this.#verified.has(key) && !this.#failed.has(key)) return false;
    }
    return true;
  }

  /**
   * When the next round stops waiting for this round's downloads still pending (ms, the clock
   * of `recordVerified`), or null while fewer than a majority of the round's trainers' results
   * settled: the straggler rule of client/results/straggler_wait.ts over the round's results.
   */
  downloadsDeadline(): number | null {
    const times = [...this.#settledAt.values()];
    const trainers = Math.max(this.view.assignments.length, times.length);
    return stragglerDeadline(this.#seenAtMs, times, trainers);
  }

  /** Accepted commitments for `batch`, sorted by hash bytes (the same order on every client). */
  candidates(batch: BatchId): Uint8Array[] {
    return [...this.#announced.values()]
      .filter((a) => a.batch.start === batch.start && a.batch.end === batch.end)
      .map((a) => a.commitment)
      .sort(compareBytes);
  }

  /** p2p keys of the round's trainers whose result this client has not accepted. */
  unheardTrainers(): PublicKeyBytes[] {
    const heard = new Set([...this.#announced.values()].map((a) => toHex(a.from)));
    return this.view.assignments
      .map((a) => this.view.clients[a.clientIndex]?.id.p2pIdentity)
      .filter((key): key is PublicKeyBytes => key !== undefined && !heard.has(toHex(key)));
  }

  /**
   * p2p keys of the round's trainers that announced Finished but whose result this client has
   * not accepted: gossip lost the result, which is still on its way (a pull brings it).
   */
  finishedUnheard(): PublicKeyBytes[] {
    return this.unheardTrainers().filter((key) => this.hasFinished(key));
  }

  /** Whether `peer` (a p2p key) announced Finished for this round. */
  hasFinished(peer: PublicKeyBytes): boolean {
    return this.#finished.has(toHex(peer));
  }

  /** Whether every key in `peers` (p2p keys) announced Finished. */
  finishedBy(peers: readonly PublicKeyBytes[]): boolean {
    return peers.every((p) => this.#finished.has(toHex(p)));
  }

  /** Keys of `peers` (p2p keys) that have not announced Finished. */
  unfinished(peers: readonly PublicKeyBytes[]): PublicKeyBytes[] {
    return peers.filter((p) => !this.#finished.has(toHex(p)));
  }

  /**
   * When a witness stops waiting for the Finished of `peers` still missing (ms, the clock of
   * `acceptFinished`), or null while fewer than a majority of them finished
   * (client/results/straggler_wait.ts).
   */
  stragglerDeadline(peers: readonly PublicKeyBytes[]): number | null {
    const times = peers.flatMap((p) => {
      const at = this.#finished.get(toHex(p));
      return at === undefined ? [] : [at];
    });
    return stragglerDeadline(this.#seenAtMs, times, peers.length);
  }

  /** How many distinct clients announced Finished. */
  get finishedCount(): number {
    return this.#finished.size;
  }

  /**
   * Merkle root over the accepted commitments, ordered by batch start then hash, so every
   * client that heard the same announcements computes the same root.
   */
  merkleRoot(): Uint8Array {
    const all = [...this.#announced.values()].sort((a, b) =>
      a.batch.start - b.batch.start || compareBytes(a.commitment, b.commitment)
    );
    return merkleRoot(all.map((a) => a.commitment));
  }

  /**
   * The witness report over this round's results: participant bloom of trainers whose
   * payload verified, broadcast bloom of the first verified commitment per batch (by hash
   * order), Merkle root of all accepted commitments.
   */
  witness(proof: WitnessProof): Witness {
    const { parameters, participantKeys, broadcastKeys } = this.#blooms;
    const participantBloom: Bloom = createBloom(parameters.numBits, participantKeys);
    const broadcastBloom: Bloom = createBloom(parameters.numBits, broadcastKeys);
    const seenBatch = new Set<string>();
    const verified = [...this.#announced.entries()]
      .filter(([key]) => this.#verified.has(key))
      .map(([, a]) => a)
      .sort((a, b) => compareBytes(a.commitment, b.commitment));
    for (const a of verified) {
      bloomAdd(participantBloom, sha256(a.signer));
      const key = batchKey(a.batch);
      if (seenBatch.has(key)) continue;
      seenBatch.add(key);
      bloomAdd(broadcastBloom, a.commitment);
    }
    return {
      proof: { ...proof },
      participantBloom,
      broadcastBloom,
      broadcastMerkle: this.merkleRoot(),
    };
  }
}

/** Lexicographic order of byte strings. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** An empty report: what a warmup witness carries. */
export function emptyWitness(proof: WitnessProof, blooms: BloomSetup): Witness {
  return {
    proof: { ...proof },
    participantBloom: createBloom(blooms.parameters.numBits, blooms.participantKeys),
    broadcastBloom: createBloom(blooms.parameters.numBits, blooms.broadcastKeys),
    broadcastMerkle: new Uint8Array(32),
  };
}
