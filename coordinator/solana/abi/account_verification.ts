/**
 * The verification parts of a layout version 3 coordinator account (docs/protocol.md,
 * "Verification"): the config's bar epochs, each round's rejected trainers, the epoch's open
 * tasks and the ejection records. The state encoding's version 1, into which account.ts
 * transcribes the rest of the account, has no place for them, so they are read here, beside it,
 * with the checks the state decoder gives them in version 5: epoch indices below
 * `config.maxClients`, known codes, a verdict and its evidence that go together, counts within
 * their capacity. The rejected lists are bitsets in the account, so they come out ascending and
 * without repeats.
 *
 * @module
 */

import { AccountDecodeError, limit } from "./account_error.ts";
import { layoutConstant, structLayout } from "./layout.ts";
import { SEAT_VERDICT_KINDS } from "../../encoding/mod.ts";
import {
  EJECTION_CAUSES,
  type EjectionRecord,
  VERIFICATION_EVIDENCE,
  VERIFICATION_STAGES,
  type VerificationSeat,
  type VerificationTask,
} from "../../core/mod.ts";

const ACCOUNT = structLayout("account_t").offsets;
const CONFIG = structLayout("config_t").offsets;
const E = structLayout("epoch_state_t").offsets;
const R = structLayout("round_t").offsets;
const T = structLayout("task_t").offsets;
const S = structLayout("seat_t").offsets;
const J = structLayout("ejection_t").offsets;
const ROUND_BYTES = structLayout("round_t").size;
const TASK_BYTES = structLayout("task_t").size;
const SEAT_BYTES = structLayout("seat_t").size;
const EJECTION_BYTES = structLayout("ejection_t").size;
const REJECTED_BYTES = layoutConstant("REJECTED_BYTES");

/** What a version 3 account holds for verification, in the state's shapes. */
export interface AccountVerification {
  verificationBarEpochs: number;
  /** Each ring slot's rejected epoch indices, ascending (slot order, as `epochState.rounds`). */
  rejected: number[][];
  verificationTasks: VerificationTask[];
  ejections: EjectionRecord[];
}

/** Reads the account's verification parts; AccountDecodeError names a defect. */
export function readAccountVerification(
  bytes: Uint8Array,
  maxClients: number,
): AccountVerification {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const es = ACCOUNT.epochState;
  const rejected: number[][] = [];
  for (let r = 0; r < layoutConstant("NUM_ROUNDS"); r++) {
    rejected.push(readRejected(bytes, es + E.rounds + r * ROUND_BYTES + R.rejected, r, maxClients));
  }
  const taskCount = limit(
    "epochState.verificationTasks.length",
    es + E.verificationTasksLen,
    bytes[es + E.verificationTasksLen],
    layoutConstant("MAX_VERIFICATION_TASKS"),
  );
  const verificationTasks: VerificationTask[] = [];
  for (let i = 0; i < taskCount; i++) {
    const at = es + E.verificationTasks + i * TASK_BYTES;
    verificationTasks.push(readTask(v, at, `epochState.verificationTasks[${i}]`, maxClients));
  }
  const ejectionCount = limit(
    "ejections.length",
    ACCOUNT.ejectionsLen,
    bytes[ACCOUNT.ejectionsLen],
    layoutConstant("NUM_EJECTION_RECORDS"),
  );
  const ejections: EjectionRecord[] = [];
  for (let i = 0; i < ejectionCount; i++) {
    ejections.push(readEjection(v, ACCOUNT.ejections + i * EJECTION_BYTES, `ejections[${i}]`));
  }
  return {
    verificationBarEpochs: v.getUint16(ACCOUNT.config + CONFIG.verificationBarEpochs, true),
    rejected,
    verificationTasks,
    ejections,
  };
}

/** The set bits of a round's rejected bitset, ascending; none may reach `maxClients`. */
function readRejected(bytes: Uint8Array, at: number, slot: number, maxClients: number): number[] {
  const out: number[] = [];
  for (let byte = 0; byte < REJECTED_BYTES; byte++) {
    const bits = bytes[at + byte];
    if (bits === 0) continue;
    for (let bit = 0; bit < 8; bit++) {
      if ((bits & (1 << bit)) === 0) continue;
      const index = byte * 8 + bit;
      if (index >= maxClients) {
        throw new AccountDecodeError(
          `epochState.rounds[${slot}].rejected`,
          at + byte,
          `epoch index ${index} must be below config.maxClients (${maxClients})`,
        );
      }
      out.push(index);
    }
  }
  return out;
}

function code<T>(field: string, at: number, value: number, table: readonly T[]): T {
  if (value >= table.length) {
    throw new AccountDecodeError(
      field,
      at,
      `unknown code ${value} (expected 0..${table.length - 1}: ${table.join(", ")})`,
    );
  }
  return table[value];
}

function epochIndex(field: string, at: number, value: number, maxClients: number): void {
  if (value >= maxClients) {
    throw new AccountDecodeError(
      field,
      at,
      `${value} must be below config.maxClients (${maxClients})`,
    );
  }
}

function readTask(v: DataView, at: number, p: string, maxClients: number): VerificationTask {
  const height = v.getUint32(at + T.height, true);
  const trainer = v.getUint16(at + T.trainer, true);
  epochIndex(`${p}.trainer`, at + T.trainer, trainer, maxClients);
  const stage = code(`${p}.stage`, at + T.stage, v.getUint8(at + T.stage), VERIFICATION_STAGES);
  const deadline = v.getUint32(at + T.deadline, true);
  const openedAt = Number(v.getBigUint64(at + T.openedAt, true));
  const decidedCode = v.getUint8(at + T.decided);
  const decided = code(`${p}.decided`, at + T.decided, decidedCode, SEAT_VERDICT_KINDS);
  const seatCount = limit(
    `${p}.seats.length`,
    at + T.seatsLen,
    v.getUint8(at + T.seatsLen),
    layoutConstant("MAX_TASK_SEATS"),
  );
  const seats: VerificationSeat[] = [];
  for (let i = 0; i < seatCount; i++) {
    seats.push(readSeat(v, at + T.seats + i * SEAT_BYTES, `${p}.seats[${i}]`, maxClients));
  }
  return {
    height,
    trainer,
    stage,
    deadline,
    openedAt,
    decided: decided === "None" ? null : decided,
    seats,
  };
}

function readSeat(v: DataView, at: number, p: string, maxClients: number): VerificationSeat {
  const verifier = v.getUint16(at + S.verifier, true);
  epochIndex(`${p}.verifier`, at + S.verifier, verifier, maxClients);
  const stage = code(`${p}.stage`, at + S.stage, v.getUint8(at + S.stage), VERIFICATION_STAGES);
  const verdict = code(
    `${p}.verdict`,
    at + S.verdict,
    v.getUint8(at + S.verdict),
    SEAT_VERDICT_KINDS,
  );
  const evidence = code(
    `${p}.evidence`,
    at + S.evidence,
    v.getUint8(at + S.evidence),
    VERIFICATION_EVIDENCE,
  );
  if ((verdict === "Fail") !== (evidence !== "None")) {
    throw new AccountDecodeError(
      `${p}.evidence`,
      at + S.evidence,
      `${evidence} does not go with the verdict ${verdict}`,
    );
  }
  return {
    verifier,
    stage,
    verdict: verdict === "None" ? null : verdict,
    evidence,
    detail: v.getUint32(at + S.detail, true),
  };
}

function readEjection(v: DataView, at: number, p: string): EjectionRecord {
  return {
    signer: new Uint8Array(v.buffer, v.byteOffset + at + J.signer, 32).slice(),
    epoch: v.getUint16(at + J.epoch, true),
    step: v.getUint32(at + J.step, true),
    cause: code(`${p}.cause`, at + J.cause, v.getUint8(at + J.cause), EJECTION_CAUSES),
    evidence: code(
      `${p}.evidence`,
      at + J.evidence,
      v.getUint8(at + J.evidence),
      VERIFICATION_EVIDENCE,
    ),
    barredUntil: v.getUint16(at + J.barredUntil, true),
  };
}
