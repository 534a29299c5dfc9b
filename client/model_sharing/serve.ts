/**
 * The serving side of P2P model sharing: at Cooldown, once the epoch's last results are applied,
 * a client snapshots its parameters into blobs (see blobs.ts: bf16 where exact, f32 otherwise) and serves them with a manifest
 * (net/p2p/model_share.ts) labelled with the run step they belong to and their digest, until
 * its next snapshot. Joiners of the next epoch fetch it; the client itself can roll back to it
 * (a coordinator that restarted from the step of its last saved epoch).
 *
 * A snapshot replaces the previous one: blobs of the old snapshot that the new one does not
 * share are forgotten, so a long run keeps one model's worth of blobs in memory.
 *
 * @module
 */
import type { ContentHash } from "../../net/p2p/mod.ts";
import { type BlobToShare, decodeManifest, shareModelSteps } from "../../net/p2p/mod.ts";
import type { PayloadService } from "../../net/p2p/mod.ts";
import { modelFromBlobs, modelToBlobSteps, type SharedModel } from "./blobs.ts";
import { hexToBytes, runSteps, toHex } from "../../common/mod.ts";
import { digestSteps } from "../../shaders/mod.ts";
import { runStepsYielding } from "./steps.ts";

/**
 * The phases of a snapshot that take seconds for a 1B model: the client reads the parameters
 * off the GPU (`read`), then {@link serveModel} digests (on the host, only when no digest is
 * given: a client with a GPU gives the GPU's), encodes and hashes them.
 */
export const SNAPSHOT_PHASES = ["read", "digest", "encode", "hash"] as const;
/** One of {@link SNAPSHOT_PHASES}. */
export type SnapshotPhase = typeof SNAPSHOT_PHASES[number];

/** Bytes of a snapshot's work between two pauses (digest, encode, hash): 4 MiB, a few ms. */
export const SNAPSHOT_STEP_BYTES = 4 * 2 ** 20;

/** What one snapshot serves. */
export interface ServedModel {
  /** sha256 of the manifest; equal on every honest client of the epoch. */
  readonly manifestHash: ContentHash;
  /** Every blob hash served for it (manifest included). */
  readonly hashes: ReadonlySet<ContentHash>;
  /** Bytes of the blobs (manifest excluded; bf16 tensors count their bf16 bytes). */
  readonly bytes: number;
  /** The run step whose parameters these are. */
  readonly step: number;
  /** Their digest (shaders/digest.ts), hex. */
  readonly digest: string;
}

/** The blob hashes a served manifest lists, plus the manifest's own, and its label. */
export function servedHashes(payloads: PayloadService, manifestHash: ContentHash): ServedModel {
  const manifest = payloads.store.get(manifestHash);
  if (manifest === undefined) {
    throw new RangeError(`manifest ${manifestHash} is not served by this node`);
  }
  const { label, entries } = decodeManifest(manifest);
  return {
    manifestHash,
    hashes: new Set([manifestHash, ...entries.map((e) => e.hash)]),
    bytes: entries.reduce((n, e) => n + e.size, 0),
    step: label.step,
    digest: toHex(label.digest),
  };
}

/** Options of {@link serveModel} and {@link serveModelYielding}. */
export interface ServeOptions {
  /** The run step whose parameters these are. */
  step: number;
  /** The previous snapshot: its blobs that this one does not use are forgotten. */
  replaces?: ServedModel | null;
  /**
   * The parameters' digest (shaders/digest.ts, hex) when the caller already has it: the GPU's
   * (`NetworkTrainer.paramsHash`, the same function of the same bytes, 1/512 of them read
   * back) instead of seconds of host hashing for a 1B model. It must be the digest of
   * `model.weights`; without it the digest is computed here from them.
   */
  digest?: string;
  /**
   * Called as each phase starts (the parameters digested, encoded into blobs, the blobs
   * hashed); what it returns hears the phase's bytes done and total. Each takes seconds for a
   * 1B model.
   */
  progress?: (phase: SnapshotPhase) => (doneBytes: number, totalBytes: number) => void;
  /** Bytes of work between two pauses (default {@link SNAPSHOT_STEP_BYTES}; tests use less). */
  stepBytes?: number;
}

/**
 * Serves a snapshot of `model` (copied: later training does not change what is served) as the
 * parameters of run step `step`, and returns what is served. The manifest's digest is the one
 * given, or computed here from the weights, so it is true of the bytes served. With
 * `replaces`, the previous snapshot's blobs that this one does not use are forgotten.
 *
 * Runs in one go: a 1B model blocks the event loop for seconds. A client on the network uses
 * {@link serveModelYielding}, which serves the same blobs under the same manifest.
 */
export function serveModel(
  payloads: PayloadService,
  model: SharedModel,
  options: ServeOptions,
): ServedModel {
  return runSteps(serveSteps(payloads, model, options));
}

/**
 * {@link serveModel}, giving the event loop a turn every few ms of work (steps.ts), so that
 * libp2p, the coordinator connection and the TUI keep running while a 1B model is snapshot.
 * The copy is taken a step at a time: `model.weights` must not change until it resolves (the
 * client serves an array of its own, fresh from the GPU).
 *
 * @example
 * ```ts ignore
 * // At Cooldown, after the last apply:
 * served = await serveModelYielding(exchange.payloads, { config, layout, weights: await trainer.readParams() },
 *   { step: state.progress.step, digest: await trainer.paramsHash(), replaces: served });
 * ```
 */
export function serveModelYielding(
  payloads: PayloadService,
  model: SharedModel,
  options: ServeOptions & { sliceMs?: number },
): Promise<ServedModel> {
  return runStepsYielding(serveSteps(payloads, model, options), { sliceMs: options.sliceMs });
}

/** The work of a snapshot as steps, pausing every `stepBytes` or so and between phases. */
function* serveSteps(
  payloads: PayloadService,
  model: SharedModel,
  options: ServeOptions,
): Generator<void, ServedModel> {
  const { progress } = options;
  const stepBytes = options.stepBytes ?? SNAPSHOT_STEP_BYTES;
  const hex = options.digest ?? (yield* digestSteps(weightBytes(model), {
    onProgress: progress?.("digest"),
    chunkBytes: stepBytes,
  }));
  const digest = hexToBytes(hex, 32, "parameter digest");
  yield;
  const blobs = yield* modelToBlobSteps(model, {
    onProgress: progress?.("encode"),
    chunkFloats: Math.max(1, Math.floor(stepBytes / 4)),
  });
  const manifestHash = yield* shareModelSteps(payloads, blobs, { step: options.step, digest }, {
    onProgress: progress?.("hash"),
    chunkBytes: stepBytes,
  });
  const served = servedHashes(payloads, manifestHash);
  const old = options.replaces;
  if (old != null) {
    payloads.forget([...old.hashes].filter((h) => !served.hashes.has(h)));
  }
  return served;
}

/**
 * The model a snapshot serves, rebuilt from this node's own blobs (a roll back to it). Throws
 * when a blob is gone from the store (the snapshot was replaced).
 */
export function servedModel(payloads: PayloadService, served: ServedModel): SharedModel {
  const manifest = payloads.store.get(served.manifestHash);
  if (manifest === undefined) throw new RangeError("the served snapshot is no longer stored");
  const blobs: BlobToShare[] = [];
  for (const entry of decodeManifest(manifest).entries) {
    const bytes = payloads.store.get(entry.hash);
    if (bytes === undefined) throw new RangeError(`blob "${entry.name}" is no longer stored`);
    blobs.push([entry.name, bytes, entry.dtype]);
  }
  return modelFromBlobs(blobs);
}

/** The bytes of a model's flat f32 parameter buffer (what its digest is computed over). */
export function weightBytes(model: Pick<SharedModel, "weights">): Uint8Array {
  const { weights } = model;
  return new Uint8Array(weights.buffer, weights.byteOffset, weights.byteLength);
}
