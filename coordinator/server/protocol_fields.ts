/**
 * Field codecs of the coordinator's TCP protocol: witnesses (proof, blooms, Merkle root),
 * witness metadata, health-check lists and checkpoints. Big-endian like the rest of net/;
 * every count and length is checked against its cap while decoding, so a peer cannot make
 * the server allocate more than the frame it already holds.
 *
 * @module
 */
import { type MessageReader, type MessageWriter, ProtocolError } from "../../net/mod.ts";
import { CHECKPOINT_KINDS } from "../encoding/mod.ts";
import {
  type Bloom,
  type Checkpoint,
  type Committee,
  type HealthCheck,
  MAX_BLOOM_BITS,
  MAX_BLOOM_KEYS,
  MAX_CLIENTS_LIMIT,
  MAX_EVAL_NAME_BYTES,
  MAX_METADATA_EVALS,
  MAX_PROMPT_RESULTS,
  MAX_STRING_BYTES,
  PARAMS_DIGEST_BYTES,
  VERIFICATION_EVIDENCE,
  type VerificationReport,
  type VerificationVerdict,
  type Witness,
  type WitnessMetadata,
  type WitnessProof,
} from "../core/mod.ts";

/** Bytes of a Merkle root. */
export const MERKLE_ROOT_BYTES = 32;
/** Bytes of an identity key. */
export const KEY_BYTES = 32;
/** Committees in the order of their wire codes. */
export const COMMITTEE_KINDS: readonly Committee[] = ["TieBreaker", "Verifier", "Trainer"];

/** Appends an IEEE-754 f64 (NaN for non-finite inputs is the caller's choice). */
export function writeF64(w: MessageWriter, value: number): void {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, value, false);
  w.bytes(b);
}

/** Reads an IEEE-754 f64. */
export function readF64(r: MessageReader, field: string): number {
  const b = r.bytes(8, field);
  return new DataView(b.buffer).getFloat64(0, false);
}

function writeU64Big(w: MessageWriter, value: bigint): void {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, value, false);
  w.bytes(b);
}

function readU64Big(r: MessageReader, field: string): bigint {
  const b = r.bytes(8, field);
  return new DataView(b.buffer).getBigUint64(0, false);
}

function writeI32(w: MessageWriter, value: number): void {
  if (!Number.isInteger(value) || value < -0x8000_0000 || value > 0x7fff_ffff) {
    throw new RangeError(`i32 field must be an integer in range, found ${value}`);
  }
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, value, false);
  w.bytes(b);
}

function readI32(r: MessageReader, field: string): number {
  const b = r.bytes(4, field);
  return new DataView(b.buffer).getInt32(0, false);
}

function writeBool(w: MessageWriter, value: boolean): void {
  w.u8(value ? 1 : 0);
}

function readBool(r: MessageReader, field: string): boolean {
  const v = r.u8(field);
  if (v > 1) throw new ProtocolError(`field "${field}" must be 0 or 1, found ${v}`);
  return v === 1;
}

function checkCount(field: string, found: number, min: number, max: number): void {
  if (found < min || found > max) {
    throw new ProtocolError(`field "${field}" counts ${found} items, expected ${min}..${max}`);
  }
}

function writeOptionalString(w: MessageWriter, value: string | null): void {
  if (value === null) {
    w.u8(0);
  } else {
    w.u8(1).string(value);
  }
}

function readOptionalString(r: MessageReader, field: string, maxBytes: number): string | null {
  return readBool(r, `${field}.present`) ? r.string(field, maxBytes) : null;
}

function writeBloom(w: MessageWriter, bloom: Bloom): void {
  w.u8(bloom.keys.length);
  for (const key of bloom.keys) writeU64Big(w, key);
  w.u32(bloom.bits.length).bytes(bloom.bits);
}

function readBloom(r: MessageReader, field: string): Bloom {
  const numKeys = r.u8(`${field}.keys`);
  checkCount(`${field}.keys`, numKeys, 1, MAX_BLOOM_KEYS);
  const keys = new BigUint64Array(numKeys);
  for (let i = 0; i < numKeys; i++) keys[i] = readU64Big(r, `${field}.keys[${i}]`);
  const numBytes = r.u32(`${field}.bits`);
  if (numBytes === 0 || numBytes % 8 !== 0 || numBytes * 8 > MAX_BLOOM_BITS) {
    throw new ProtocolError(
      `field "${field}.bits" is ${numBytes} bytes, expected a positive multiple of 8 ` +
        `up to ${MAX_BLOOM_BITS / 8}`,
    );
  }
  return { keys, bits: r.bytes(numBytes, `${field}.bits`) };
}

/** Appends a witness proof: position, index, seat flag. */
export function writeProof(w: MessageWriter, proof: WitnessProof): void {
  w.u64(proof.position).u64(proof.index);
  writeBool(w, proof.witness);
}

/** Reads a witness proof written by {@linkcode writeProof}. */
export function readProof(r: MessageReader): WitnessProof {
  const position = r.u64("proof.position");
  const index = r.u64("proof.index");
  return { position, index, witness: readBool(r, "proof.witness") };
}

/** Appends a parameter digest (PARAMS_DIGEST_BYTES bytes; all zero for none). */
export function writeDigest(w: MessageWriter, digest: Uint8Array): void {
  if (digest.length !== PARAMS_DIGEST_BYTES) {
    throw new RangeError(
      `paramsDigest must be ${PARAMS_DIGEST_BYTES} bytes, found ${digest.length}`,
    );
  }
  w.bytes(digest);
}

/** Reads a parameter digest written by {@linkcode writeDigest}. */
export function readDigest(r: MessageReader): Uint8Array {
  return r.bytes(PARAMS_DIGEST_BYTES, "paramsDigest");
}

/** Appends a witness report: proof, participant and broadcast blooms, Merkle root. */
export function writeWitness(w: MessageWriter, witness: Witness): void {
  writeProof(w, witness.proof);
  writeBloom(w, witness.participantBloom);
  writeBloom(w, witness.broadcastBloom);
  if (witness.broadcastMerkle.length !== MERKLE_ROOT_BYTES) {
    throw new RangeError(
      `broadcastMerkle must be ${MERKLE_ROOT_BYTES} bytes, found ${witness.broadcastMerkle.length}`,
    );
  }
  w.bytes(witness.broadcastMerkle);
}

/** Reads a witness report written by {@linkcode writeWitness}. */
export function readWitness(r: MessageReader): Witness {
  return {
    proof: readProof(r),
    participantBloom: readBloom(r, "participantBloom"),
    broadcastBloom: readBloom(r, "broadcastBloom"),
    broadcastMerkle: r.bytes(MERKLE_ROOT_BYTES, "broadcastMerkle"),
  };
}

/** Appends witness metadata; throws RangeError when a list or name is over its cap. */
export function writeMetadata(w: MessageWriter, m: WitnessMetadata): void {
  if (m.evals.length > MAX_METADATA_EVALS) {
    throw new RangeError(
      `metadata.evals has ${m.evals.length} items, at most ${MAX_METADATA_EVALS}`,
    );
  }
  if (m.promptResults.length > MAX_PROMPT_RESULTS) {
    throw new RangeError(
      `metadata.promptResults has ${m.promptResults.length} items, at most ${MAX_PROMPT_RESULTS}`,
    );
  }
  w.u32(m.step);
  writeF64(w, m.tokensPerSec);
  writeF64(w, m.bandwidthPerSec);
  writeF64(w, m.loss);
  w.u8(m.evals.length);
  for (const e of m.evals) {
    if (new TextEncoder().encode(e.name).length > MAX_EVAL_NAME_BYTES) {
      throw new RangeError(`eval name "${e.name}" exceeds ${MAX_EVAL_NAME_BYTES} UTF-8 bytes`);
    }
    w.string(e.name);
    writeF64(w, e.value);
  }
  w.u8(m.promptResults.length);
  for (const t of m.promptResults) writeI32(w, t);
  w.u8(m.promptIndex);
  writeF64(w, m.efficiency);
}

/** Reads witness metadata written by {@linkcode writeMetadata}. */
export function readMetadata(r: MessageReader): WitnessMetadata {
  const step = r.u32("metadata.step");
  const tokensPerSec = readF64(r, "metadata.tokensPerSec");
  const bandwidthPerSec = readF64(r, "metadata.bandwidthPerSec");
  const loss = readF64(r, "metadata.loss");
  const numEvals = r.u8("metadata.evals");
  checkCount("metadata.evals", numEvals, 0, MAX_METADATA_EVALS);
  const evals = [];
  for (let i = 0; i < numEvals; i++) {
    const name = r.string(`metadata.evals[${i}].name`, MAX_EVAL_NAME_BYTES);
    evals.push({ name, value: readF64(r, `metadata.evals[${i}].value`) });
  }
  const numPrompt = r.u8("metadata.promptResults");
  checkCount("metadata.promptResults", numPrompt, 0, MAX_PROMPT_RESULTS);
  const promptResults = [];
  for (let i = 0; i < numPrompt; i++) {
    promptResults.push(readI32(r, `metadata.promptResults[${i}]`));
  }
  const promptIndex = r.u8("metadata.promptIndex");
  const efficiency = readF64(r, "metadata.efficiency");
  return {
    step,
    tokensPerSec,
    bandwidthPerSec,
    loss,
    evals,
    promptResults,
    promptIndex,
    efficiency,
  };
}

/** Appends a health-check list: a u32 count, then each client's identity and proof. */
export function writeHealthChecks(w: MessageWriter, checks: readonly HealthCheck[]): void {
  if (checks.length > MAX_CLIENTS_LIMIT) {
    throw new RangeError(`a health check lists at most ${MAX_CLIENTS_LIMIT} clients`);
  }
  w.u32(checks.length);
  for (const { id, proof } of checks) {
    if (id.signer.length !== KEY_BYTES || id.p2pIdentity.length !== KEY_BYTES) {
      throw new RangeError(`health check identities must be ${KEY_BYTES}-byte keys`);
    }
    w.bytes(id.signer).bytes(id.p2pIdentity).u8(COMMITTEE_KINDS.indexOf(proof.committee));
    w.u64(proof.position).u64(proof.index);
  }
}

/** Reads a health-check list (1..MAX_CLIENTS_LIMIT entries). */
export function readHealthChecks(r: MessageReader): HealthCheck[] {
  const n = r.u32("checks");
  checkCount("checks", n, 1, MAX_CLIENTS_LIMIT);
  const out: HealthCheck[] = [];
  for (let i = 0; i < n; i++) {
    const signer = r.bytes(KEY_BYTES, `checks[${i}].signer`);
    const p2pIdentity = r.bytes(KEY_BYTES, `checks[${i}].p2pIdentity`);
    const code = r.u8(`checks[${i}].committee`);
    const committee = COMMITTEE_KINDS[code];
    if (committee === undefined) {
      throw new ProtocolError(
        `field "checks[${i}].committee" has code ${code}, expected 0..${
          COMMITTEE_KINDS.length - 1
        }`,
      );
    }
    const position = r.u64(`checks[${i}].position`);
    const index = r.u64(`checks[${i}].index`);
    out.push({ id: { signer, p2pIdentity }, proof: { committee, position, index } });
  }
  return out;
}

/** Appends a checkpoint: its kind code, then the repo it names (if any). */
export function writeCheckpoint(w: MessageWriter, checkpoint: Checkpoint): void {
  w.u8(CHECKPOINT_KINDS.indexOf(checkpoint.kind));
  switch (checkpoint.kind) {
    case "Ephemeral":
      return;
    case "Dummy":
    case "Hub":
    case "P2P":
      w.string(checkpoint.repo.repoId);
      writeOptionalString(w, checkpoint.repo.revision);
      return;
    case "Gcs":
    case "P2PGcs":
      w.string(checkpoint.repo.bucket);
      writeOptionalString(w, checkpoint.repo.prefix);
      return;
    default: {
      const never: never = checkpoint;
      throw new TypeError(`Unknown checkpoint ${JSON.stringify(never)}`);
    }
  }
}

/** Reads a checkpoint written by {@linkcode writeCheckpoint}; strings capped at MAX_STRING_BYTES. */
export function readCheckpoint(r: MessageReader): Checkpoint {
  const code = r.u8("repo.kind");
  const kind = CHECKPOINT_KINDS[code];
  if (kind === undefined) {
    throw new ProtocolError(
      `field "repo.kind" has code ${code}, expected 0..${CHECKPOINT_KINDS.length - 1}`,
    );
  }
  switch (kind) {
    case "Ephemeral":
      return { kind };
    case "Dummy":
    case "Hub":
    case "P2P": {
      const repoId = r.string("repo.repoId", MAX_STRING_BYTES);
      return {
        kind,
        repo: { repoId, revision: readOptionalString(r, "repo.revision", MAX_STRING_BYTES) },
      };
    }
    case "Gcs":
    case "P2PGcs": {
      const bucket = r.string("repo.bucket", MAX_STRING_BYTES);
      return {
        kind,
        repo: { bucket, prefix: readOptionalString(r, "repo.prefix", MAX_STRING_BYTES) },
      };
    }
  }
}

/** Verdicts in the order of their wire codes. */
export const VERDICT_KINDS: readonly VerificationVerdict[] = ["Pass", "Fail"];

/**
 * Appends a verification report: u32 height, u16 trainer (epoch index), u8 verdict, u8 evidence,
 * u32 detail.
 */
export function writeVerificationReport(w: MessageWriter, report: VerificationReport): void {
  w.u32(report.height).u16(report.trainer);
  w.u8(VERDICT_KINDS.indexOf(report.verdict));
  w.u8(VERIFICATION_EVIDENCE.indexOf(report.evidence));
  w.u32(report.detail);
}

/** Reads a verification report, refusing unknown verdict and evidence codes. */
export function readVerificationReport(r: MessageReader): VerificationReport {
  const height = r.u32("height");
  const trainer = r.u16("trainer");
  const code = (field: string, table: readonly string[]) => {
    const c = r.u8(field);
    if (c >= table.length) {
      throw new ProtocolError(`field "${field}" has code ${c}, expected 0..${table.length - 1}`);
    }
    return c;
  };
  const verdict = VERDICT_KINDS[code("verdict", VERDICT_KINDS)];
  const evidence = VERIFICATION_EVIDENCE[code("evidence", VERIFICATION_EVIDENCE)];
  return { height, trainer, verdict, evidence, detail: r.u32("detail") };
}
