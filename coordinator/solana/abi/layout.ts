/**
 * The coordinator account's layout, version 7, written down once. Everything else is made from
 * this table: the C header the program is compiled with (program/layout.h, written by
 * toolchain/generate_layout.ts), the account decoder's offsets (account.ts reads them from
 * {@linkcode structLayout} at load), and the layout tables of docs/solana-program.md. A check in
 * `deno task check` fails when a written file no longer matches the table.
 *
 * Every field is little-endian and naturally aligned; padding is written out as `_pad` fields, and
 * {@linkcode structLayout} refuses a table that would leave the C compiler room to add any. The
 * capacities come from the TypeScript constants they mirror wherever one exists.
 *
 * Changing a field's offset is a new layout version: version 2 appended the parameter digests
 * after the delegates, leaving every version 1 offset where it was; version 3 added verification
 * (the config's bar epochs, each round's rejected trainers, the epoch's open verification tasks
 * and the ejection records), which moved everything after the first round; version 4 appended the
 * meeting addresses after the ejection records, leaving every version 3 offset where it was;
 * version 5 appended the epoch rates and each registration's earned points after them, leaving
 * every version 4 offset where it was; version 6 appended the join deposit and each
 * registration's deposit after those, leaving every version 5 offset where it was; version 7
 * appended each registration's slashed points after the deposits, leaving every version 6 offset
 * where it was.
 *
 * @example
 * ```ts
 * import { structLayout } from "./layout.ts";
 * const account = structLayout("account_t");
 * if (account.size !== 227_888 || account.offsets.ejections !== 219_420) {
 *   throw new Error("layout version 7 moved");
 * }
 * ```
 *
 * @module
 */
import {
  CLIENT_STATES,
  COORDINATOR_ERROR_CODES,
  DEFAULT_MAX_CLIENTS,
  DEFAULT_VERIFICATION_BAR_EPOCHS,
  EJECTION_CAUSES,
  MAX_BLOOM_KEYS,
  MAX_COMMITTEE_DRAWS,
  MAX_RUN_ID_BYTES,
  MAX_SAMPLES_PER_ROUND,
  MAX_STRING_BYTES,
  MAX_URL_BYTES,
  MAX_VERIFICATION_TASKS,
  MAX_WITNESSES,
  MIN_VERIFIERS_PER_TASK,
  NUM_DIGEST_RECORDS,
  NUM_EJECTION_RECORDS,
  NUM_STORED_ROUNDS,
  PARAMS_DIGEST_BYTES,
  RUN_STATES,
  VERIFICATION_EVIDENCE,
  VERIFICATION_STAGE_ROUNDS,
  VERIFICATION_STAGES,
  VERIFIERS_PER_TASK,
  witnessBloomParameters,
} from "../../core/mod.ts";
import { CHECKPOINT_KINDS, SEAT_VERDICT_KINDS } from "../../encoding/mod.ts";
import { COORDINATOR_ERROR_BASE, PROGRAM_ERROR_BASE, PROGRAM_ERROR_CODES } from "./errors.ts";
import {
  MAX_DELEGATES,
  MAX_DESCRIPTION_BYTES,
  MAX_NAME_BYTES,
  WITNESS_TAIL_BYTES,
} from "./instructions.ts";
import {
  MAX_MEETING_ADDRESS_BYTES,
  MAX_MEETING_ADDRESSES,
  MEETING_ADDRESS_KINDS,
} from "./meeting_addresses.ts";

/** The account's layout version (7: version 6 plus the slashed points). */
export const ACCOUNT_LAYOUT_VERSION = 7;

/** The account's first 8 bytes once `init_coordinator` ran. */
export const ACCOUNT_MAGIC_TEXT = "PSYCOORD";

/** A C scalar of the layout. */
export type Scalar = "u8" | "u16" | "u32" | "u64";

/** Bytes (and alignment) of each scalar. */
export const SCALAR_BYTES: Readonly<Record<Scalar, number>> = { u8: 1, u16: 2, u32: 4, u64: 8 };

/** A `#define` of layout.h. */
export interface LayoutConstant {
  /** The C name. */
  readonly name: string;
  readonly value: number;
  /** The C literal, when it is not the plain decimal value. */
  readonly literal?: string;
  /** One line: what it is (a C comment above it). */
  readonly doc?: string;
}

/** The capacities and flags of the account, in layout.h's order. */
export const LAYOUT_CONSTANTS: readonly LayoutConstant[] = [
  { name: "ACCOUNT_VERSION", value: ACCOUNT_LAYOUT_VERSION },
  { name: "MAX_CLIENTS", value: DEFAULT_MAX_CLIENTS },
  { name: "MAX_WITNESSES", value: MAX_WITNESSES },
  { name: "NUM_ROUNDS", value: NUM_STORED_ROUNDS },
  { name: "MAX_BLOOM_KEYS", value: MAX_BLOOM_KEYS },
  {
    name: "MAX_BLOOM_BYTES",
    value: witnessBloomParameters(DEFAULT_MAX_CLIENTS).numBits / 8,
    doc: "Bloom bits at the 256-client cap: ceil(256 * 9.585 / 64) * 64 = 2496 bits.",
  },
  { name: "MAX_DELEGATES", value: MAX_DELEGATES },
  { name: "RUN_ID_BYTES", value: MAX_RUN_ID_BYTES },
  { name: "STR_BYTES", value: MAX_STRING_BYTES },
  { name: "URL_BYTES", value: MAX_URL_BYTES },
  { name: "NAME_BYTES", value: MAX_NAME_BYTES },
  { name: "DESCRIPTION_BYTES", value: MAX_DESCRIPTION_BYTES },
  {
    name: "DATA_LOCATION_BYTES",
    value: 296,
    doc: "Longest state-encoding of a data location, learning-rate schedule and optimizer.",
  },
  { name: "LR_SCHEDULE_BYTES", value: 56 },
  { name: "OPTIMIZER_BYTES", value: 48 },
  { name: "NUM_DIGEST_RECORDS", value: NUM_DIGEST_RECORDS },
  { name: "DIGEST_BYTES", value: PARAMS_DIGEST_BYTES },
  {
    name: "WITNESS_TAIL_BYTES",
    value: WITNESS_TAIL_BYTES,
    doc: "The witness instruction's optional metadata tail: step u32, four finite f64.",
  },
  {
    name: "MAX_SAFE_INTEGER",
    value: Number.MAX_SAFE_INTEGER,
    literal: "9007199254740991ull",
    doc:
      "2^53 - 1: the largest u64 the TypeScript side holds as a number (docs/state-encoding.md).",
  },
  { name: "FLAG_PERMISSIONLESS", value: 1, literal: "1u", doc: "Account flags." },
  {
    name: "REJECTED_BYTES",
    value: DEFAULT_MAX_CLIENTS / 8,
    doc: "A round's rejected trainers: one bit per epoch index.",
  },
  { name: "MAX_VERIFICATION_TASKS", value: MAX_VERIFICATION_TASKS },
  {
    name: "MAX_TASK_SEATS",
    value: 2 * VERIFIERS_PER_TASK,
    doc: "A task's seats: its Verify stage's, then its TieBreak stage's.",
  },
  { name: "VERIFIERS_PER_TASK", value: VERIFIERS_PER_TASK },
  { name: "MIN_VERIFIERS_PER_TASK", value: MIN_VERIFIERS_PER_TASK },
  { name: "MAX_SAMPLES_PER_ROUND", value: MAX_SAMPLES_PER_ROUND },
  { name: "VERIFICATION_STAGE_ROUNDS", value: VERIFICATION_STAGE_ROUNDS },
  { name: "MAX_COMMITTEE_DRAWS", value: MAX_COMMITTEE_DRAWS },
  { name: "NUM_EJECTION_RECORDS", value: NUM_EJECTION_RECORDS },
  {
    name: "NUM_EVIDENCE_KINDS",
    value: VERIFICATION_EVIDENCE.length,
    doc: "Evidence codes a report may carry: 0 .. NUM_EVIDENCE_KINDS - 1.",
  },
  {
    name: "DEFAULT_VERIFICATION_BAR_EPOCHS",
    value: DEFAULT_VERIFICATION_BAR_EPOCHS,
    doc: "init_coordinator's verificationBarEpochs (the run config's default).",
  },
  {
    name: "MAX_MEETING_ADDRESSES",
    value: MAX_MEETING_ADDRESSES,
    doc: "Meeting addresses a run holds (meeting_addresses.ts says why 4 of 192 bytes).",
  },
  { name: "MEETING_ADDRESS_BYTES", value: MAX_MEETING_ADDRESS_BYTES },
  { name: "NUM_MEETING_KINDS", value: MEETING_ADDRESS_KINDS.length },
];

/** The value of constant `name` of {@linkcode LAYOUT_CONSTANTS}. */
export function layoutConstant(name: string): number {
  const found = LAYOUT_CONSTANTS.find((c) => c.name === name);
  if (found === undefined) throw new RangeError(`No layout constant "${name}"`);
  return found.value;
}

/** A C `enum` of layout.h: names numbered from `first`. */
export interface LayoutEnum {
  /** C names, in the order of their numbers. */
  readonly names: readonly string[];
  readonly first: number;
  readonly doc?: string;
  /** Write every member's number, not only the first's. */
  readonly numbered?: boolean;
}

/** `"WitnessesFull"` → `"WITNESSES_FULL"`. */
export function upperSnake(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();
}

/** The enums, in layout.h's order: every one follows the TypeScript list it mirrors. */
export const LAYOUT_ENUMS: readonly LayoutEnum[] = [
  {
    names: RUN_STATES.map((s) => `RS_${upperSnake(s)}`),
    first: 0,
    numbered: true,
    doc: "Run states (types.ts RUN_STATES).",
  },
  {
    names: CLIENT_STATES.map((s) => `CS_${upperSnake(s)}`),
    first: 0,
    numbered: true,
    doc: "Client states (types.ts CLIENT_STATES).",
  },
  {
    names: CHECKPOINT_KINDS.map((k) => `CK_${k.toUpperCase()}`),
    first: 0,
    numbered: true,
    doc: "Checkpoint kinds (encoding/layout.ts CHECKPOINT_KINDS).",
  },
  {
    names: ["TieBreaker", "Verifier", "Trainer"].map((c) => `COMMITTEE_${upperSnake(c)}`),
    first: 0,
    numbered: true,
    doc: "Committees.",
  },
  {
    names: VERIFICATION_STAGES.map((s) => `STAGE_${upperSnake(s)}`),
    first: 0,
    numbered: true,
    doc: "Verification stages (types.ts VERIFICATION_STAGES).",
  },
  {
    names: SEAT_VERDICT_KINDS.map((v) => `VERDICT_${upperSnake(v)}`),
    first: 0,
    numbered: true,
    doc: "A seat's verdict (encoding/layout.ts SEAT_VERDICT_KINDS).",
  },
  {
    names: VERIFICATION_EVIDENCE.map((e) => `EVIDENCE_${upperSnake(e)}`),
    first: 0,
    numbered: true,
    doc: "Verification evidence (types.ts VERIFICATION_EVIDENCE).",
  },
  {
    names: EJECTION_CAUSES.map((c) => `CAUSE_${upperSnake(c)}`),
    first: 0,
    numbered: true,
    doc: "Ejection causes (types.ts EJECTION_CAUSES).",
  },
  {
    names: MEETING_ADDRESS_KINDS.map((k) => `MEETING_${upperSnake(k)}`),
    first: 0,
    numbered: true,
    doc: "Meeting address kinds (meeting_addresses.ts MEETING_ADDRESS_KINDS).",
  },
];

/** The program's error codes: CoordinatorError numbers from 6000, then the program's own. */
export const ERROR_ENUMS: readonly LayoutEnum[] = [
  {
    names: COORDINATOR_ERROR_CODES.map((e) => `E_${upperSnake(e)}`),
    first: COORDINATOR_ERROR_BASE,
    doc: "Error codes: 6000 + CoordinatorError number (coordinator/core/errors.ts), then the " +
      "program's.",
  },
  { names: PROGRAM_ERROR_CODES.map((e) => `E_${upperSnake(e)}`), first: PROGRAM_ERROR_BASE },
];

/** One member of a struct. */
export interface LayoutField {
  /** The C member name; `_pad…` for padding, which must stay zero. */
  readonly c: string;
  /** A scalar, or the C name of another struct of the table. */
  readonly type: Scalar | string;
  /** Array dimensions, outermost first: numbers or constant names. */
  readonly dims?: readonly (number | string)[];
  /** The field's name in the docs (default: its TypeScript name). */
  readonly label?: string;
  /** What it holds, for the docs' table. */
  readonly doc?: string;
  /** A C comment above the member. */
  readonly comment?: string;
  /** The docs list this struct's fields in place of one row. */
  readonly inline?: boolean;
}

/** One `typedef struct` of layout.h, and its section of the docs. */
export interface LayoutStruct {
  /** The C type name. */
  readonly c: string;
  /** The docs' heading, without the offset or size the generator adds. */
  readonly title: string;
  /** A C comment above the typedef. */
  readonly comment?: string;
  /** A paragraph between the docs' heading and the table. */
  readonly intro?: string;
  /** A paragraph after the docs' table. */
  readonly notes?: string;
  /** Where the struct sits in the account, when it sits there once (its docs show absolute offsets). */
  readonly at?: string;
  /** Sections of the docs nest: 3 (###) for the account's parts, 4 (####) for repeated ones. */
  readonly depth?: 3 | 4;
  /** Not a section of its own in the docs (shown inline in its parent). */
  readonly noSection?: boolean;
  readonly fields: readonly LayoutField[];
}

/** `bytes` of padding: one scalar of that size where there is one (`u8 _pad;`), else `u8[bytes]`. */
function pad(c: string, bytes: number, type: Scalar = "u8"): LayoutField {
  return SCALAR_BYTES[type] === bytes ? { c, type } : { c, type: "u8", dims: [bytes] };
}

/** The account's structs, each before the structs that hold it (layout.h's order). */
export const LAYOUT_STRUCTS: readonly LayoutStruct[] = [
  {
    c: "config_t",
    title: "config",
    at: "config",
    intro: "The state encoding's CoordinatorConfig in its version 1 (66 bytes, same offsets, " +
      "see `docs/state-encoding.md`), then `verificationBarEpochs` (which version 1 lacks) and " +
      "4 zero bytes. The `update` instruction carries the first 68 bytes verbatim. After " +
      "`init_coordinator` it is all zero except `maxClients = 256` and " +
      "`verificationBarEpochs = 4` (the run config's default).",
    fields: [
      { c: "warmup_time", type: "u64" },
      { c: "cooldown_time", type: "u64" },
      { c: "max_round_train_time", type: "u64" },
      { c: "round_witness_time", type: "u64" },
      { c: "global_batch_size_warmup_tokens", type: "u64" },
      { c: "epoch_time", type: "u64" },
      { c: "total_steps", type: "u32" },
      { c: "init_min_clients", type: "u16" },
      { c: "min_clients", type: "u16" },
      { c: "witness_nodes", type: "u16" },
      { c: "global_batch_size_start", type: "u16" },
      { c: "global_batch_size_end", type: "u16" },
      { c: "verification_percent", type: "u8" },
      { c: "waiting_for_members_extra_time", type: "u8" },
      { c: "max_clients", type: "u16", doc: "1..256 on Solana" },
      {
        c: "verification_bar_epochs",
        type: "u16",
        doc: "epochs an ejected client sits out (version 3; was padding)",
      },
      pad("_pad", 4),
    ],
  },
  {
    c: "checkpoint_t",
    title: "checkpoint",
    comment: "Hub repos use (repo_id, revision), Gcs repos (bucket, prefix).",
    noSection: true,
    fields: [
      { c: "kind", type: "u8", doc: "`CHECKPOINT_KINDS` code" },
      {
        c: "has_second",
        type: "u8",
        doc: "the second string (revision / prefix) is present: 0 / 1",
      },
      { c: "first_len", type: "u8", doc: "length of the first string (repoId / bucket), ≤ 64" },
      { c: "second_len", type: "u8", doc: "length of the second string, ≤ 64" },
      { c: "first", type: "u8", dims: ["STR_BYTES"], doc: "UTF-8, zero padded" },
      { c: "second", type: "u8", dims: ["STR_BYTES"], doc: "UTF-8, zero padded" },
    ],
  },
  {
    c: "model_t",
    title: "model",
    at: "model",
    comment: "dataLocation, lrSchedule and optimizer are stored as their state-encoding bytes.",
    notes: "The checkpoint is stored unpacked because the program rewrites it (P2P ↔ Hub, " +
      "checkpoint reports). After `init_coordinator` the model is unset: Dummy data location " +
      "(length 1), Ephemeral checkpoint, Constant schedule with zeros (length 21), Dummy " +
      "optimizer (length 1), `maxSeqLen = 0`.",
    fields: [
      { c: "architecture", type: "u8", doc: "`ARCHITECTURE_KINDS` code" },
      { c: "data_type", type: "u8", doc: "`DATA_TYPE_KINDS` code" },
      { c: "data_location_len", type: "u16", doc: "≤ 296" },
      { c: "max_seq_len", type: "u32" },
      { c: "cold_start_warmup_steps", type: "u32" },
      { c: "lr_schedule_len", type: "u16", doc: "≤ 56" },
      { c: "optimizer_len", type: "u16", doc: "≤ 48" },
      { c: "checkpoint", type: "checkpoint_t", inline: true },
      {
        c: "data_location",
        type: "u8",
        dims: ["DATA_LOCATION_BYTES"],
        doc: "its state-encoding bytes",
      },
      {
        c: "lr_schedule",
        type: "u8",
        dims: ["LR_SCHEDULE_BYTES"],
        doc: "its state-encoding bytes",
      },
      { c: "optimizer", type: "u8", dims: ["OPTIMIZER_BYTES"], doc: "its state-encoding bytes" },
      {
        c: "snapshot_dtype",
        type: "u8",
        doc: "`SNAPSHOT_DTYPE_KINDS` code: 0 f32, 1 bf16 (was padding: older accounts hold 0)",
      },
      pad("_pad", 3),
    ],
  },
  {
    c: "metadata_t",
    title: "metadata",
    at: "metadata",
    fields: [
      { c: "num_parameters", type: "u64", doc: "≤ 2^53 − 1" },
      { c: "vocab_size", type: "u64" },
      { c: "description_len", type: "u16", doc: "≤ 280" },
      { c: "name_len", type: "u8", doc: "≤ 64" },
      pad("_pad", 5),
      { c: "name", type: "u8", dims: ["NAME_BYTES"], doc: "UTF-8" },
      { c: "description", type: "u8", dims: ["DESCRIPTION_BYTES"], doc: "UTF-8" },
    ],
  },
  {
    c: "bloom_t",
    title: "Bloom",
    depth: 4,
    notes: "A bloom holds `k` keys and `m` bits with `(m, k) = " +
      "witnessBloomParameters(config.maxClients)` (at most 32 keys and 2,496 bits at 256 " +
      "clients); unused key and bit slots are zero. Bit `i` is in bit byte `i >> 3` at bit " +
      "`i & 7`, as in the state encoding.",
    fields: [
      { c: "keys", type: "u64", dims: ["MAX_BLOOM_KEYS"] },
      { c: "bits", type: "u8", dims: ["MAX_BLOOM_BYTES"] },
    ],
  },
  {
    c: "witness_t",
    title: "Witness",
    depth: 4,
    fields: [
      { c: "position", type: "u32", label: "proof.position" },
      { c: "index", type: "u32", label: "proof.index" },
      { c: "witness", type: "u8", label: "proof.witness", doc: "0 / 1" },
      pad("_pad", 7),
      { c: "participant", type: "bloom_t", label: "participantBloom" },
      { c: "broadcast", type: "bloom_t", label: "broadcastBloom" },
      { c: "merkle", type: "u8", dims: [32], label: "broadcastMerkle" },
    ],
  },
  {
    c: "round_t",
    title: "Round",
    depth: 4,
    fields: [
      { c: "data_index", type: "u64" },
      { c: "random_seed", type: "u64", doc: "full range" },
      { c: "height", type: "u32" },
      { c: "clients_len", type: "u16" },
      { c: "tie_breaker_tasks", type: "u16" },
      { c: "witnesses_len", type: "u8", doc: "≤ 32" },
      pad("_pad", 7),
      {
        c: "rejected",
        type: "u8",
        dims: ["REJECTED_BYTES"],
        doc: "trainers whose results are not applied: bit `e & 7` of byte `e >> 3` for epoch " +
          "index `e`, none at or above `maxClients` (version 3)",
      },
      { c: "witnesses", type: "witness_t", dims: ["MAX_WITNESSES"] },
    ],
  },
  {
    c: "client_t",
    title: "Client",
    depth: 4,
    fields: [
      { c: "signer", type: "u8", dims: [32], label: "id.signer", doc: "the wallet" },
      { c: "p2p", type: "u8", dims: [32], label: "id.p2pIdentity", doc: "the libp2p key" },
      { c: "exited_height", type: "u32" },
      { c: "epoch_index", type: "u16" },
      { c: "state", type: "u8", doc: "`CLIENT_STATES` code" },
      pad("_pad", 1),
    ],
  },
  {
    c: "seat_t",
    title: "VerificationSeat",
    depth: 4,
    comment: "One verifier's seat of a task, and its report (types.ts VerificationSeat).",
    fields: [
      { c: "verifier", type: "u16", doc: "the verifier's epoch index" },
      { c: "stage", type: "u8", doc: "`VERIFICATION_STAGES` code: 0 Verify, 1 TieBreak" },
      { c: "verdict", type: "u8", doc: "0 none yet, 1 Pass, 2 Fail" },
      {
        c: "evidence",
        type: "u8",
        doc: "`VERIFICATION_EVIDENCE` code; 0 (None) unless the verdict is Fail",
      },
      pad("_pad", 3),
      { c: "detail", type: "u32" },
    ],
  },
  {
    c: "task_t",
    title: "VerificationTask",
    depth: 4,
    comment: "A sampled result under verification (types.ts VerificationTask).",
    fields: [
      { c: "opened_at", type: "u64", doc: "when the current stage opened (unix seconds)" },
      { c: "height", type: "u32", doc: "the round whose result is verified" },
      {
        c: "deadline",
        type: "u32",
        doc: "the stage closes when a RoundWitness of this round or later ends, once it lasted " +
          "2 × max_round_train_time",
      },
      { c: "trainer", type: "u16", doc: "the trainer's epoch index" },
      { c: "stage", type: "u8", doc: "`VERIFICATION_STAGES` code" },
      { c: "seats_len", type: "u8", label: "seats length", doc: "≤ 6" },
      {
        c: "seats",
        type: "seat_t",
        dims: ["MAX_TASK_SEATS"],
        doc: "Verify seats first, then TieBreak seats",
      },
      {
        c: "decided",
        type: "u8",
        doc: "0 not yet, 1 Pass, 2 Fail: decided tasks stay open until the stage closes",
      },
      pad("_pad", 3),
    ],
  },
  {
    c: "ejection_t",
    title: "EjectionRecord",
    depth: 4,
    comment: "A client ejected by verification (types.ts EjectionRecord).",
    fields: [
      { c: "signer", type: "u8", dims: [32] },
      { c: "step", type: "u32", doc: "the step of the result or task it was ejected for" },
      { c: "epoch", type: "u16", doc: "the epoch it was ejected in" },
      { c: "barred_until", type: "u16", doc: "the first epoch it may join again" },
      { c: "cause", type: "u8", doc: "`EJECTION_CAUSES` code" },
      { c: "evidence", type: "u8", doc: "`VERIFICATION_EVIDENCE` code" },
      pad("_pad", 2),
    ],
  },
  {
    c: "epoch_state_t",
    title: "epochState",
    at: "epoch_state",
    fields: [
      { c: "start_step", type: "u32" },
      { c: "last_step", type: "u32", doc: "0 = unset" },
      { c: "start_timestamp", type: "u64" },
      { c: "clients_len", type: "u16", label: "clients length", doc: "≤ config.maxClients" },
      { c: "exited_len", type: "u16", label: "exitedClients length" },
      { c: "rounds_head", type: "u8", doc: "< 4" },
      { c: "first_round", type: "u8", doc: "0 / 1" },
      { c: "cold_start_epoch", type: "u8", doc: "0 / 1" },
      {
        c: "verification_tasks_len",
        type: "u8",
        label: "verificationTasks length",
        doc: "open tasks, ≤ 16 (version 3; was padding)",
      },
      { c: "rounds", type: "round_t", dims: ["NUM_ROUNDS"] },
      { c: "clients", type: "client_t", dims: ["MAX_CLIENTS"] },
      { c: "exited", type: "client_t", dims: ["MAX_CLIENTS"], label: "exitedClients" },
      {
        c: "verification_tasks",
        type: "task_t",
        dims: ["MAX_VERIFICATION_TASKS"],
        doc: "oldest first (version 3)",
      },
    ],
  },
  {
    c: "registration_t",
    title: "Registration",
    depth: 4,
    comment: "A client that joined for epoch `active` (the account's next_active when it joined).",
    intro: "A registration whose `active == nextActive` is **pending**: the WaitingForMembers " +
      "tick takes the pending registrations, in registry order, as the machine's pending list " +
      "(the first `config.maxClients` of them become the epoch's clients), and increments " +
      "`nextActive` when the epoch starts, so every client joins again for every epoch (as in " +
      "Psyche). Joining during an epoch registers for the next one. With all registrations " +
      "taken, a new wallet reuses the first **stale** one: joined for neither the next epoch " +
      "nor the running one, and holding no earned points, no slashed points and no deposit " +
      "(Psyche never reuses one).",
    fields: [
      { c: "signer", type: "u8", dims: [32] },
      { c: "p2p", type: "u8", dims: [32], label: "p2pIdentity" },
      { c: "active", type: "u64" },
    ],
  },
  {
    c: "digest_record_t",
    title: "DigestRecord",
    depth: 4,
    comment: "A digest a quorum reported for the parameters of `step` (types.ts DigestRecord).",
    fields: [
      { c: "step", type: "u32" },
      { c: "digest", type: "u8", dims: ["DIGEST_BYTES"], doc: "never all zero" },
    ],
  },
  {
    c: "digest_vote_t",
    title: "DigestVote",
    depth: 4,
    comment: "One client's digest vote in the current phase (types.ts DigestVote).",
    fields: [
      { c: "index", type: "u16", doc: "the voter's index in the epoch's client list" },
      { c: "digest", type: "u8", dims: ["DIGEST_BYTES"], doc: "never all zero" },
    ],
  },
  {
    c: "meeting_address_t",
    title: "MeetingAddress",
    depth: 4,
    comment: "Where the run's clients meet (meeting_addresses.ts MeetingAddress).",
    fields: [
      { c: "kind", type: "u8", doc: "`MEETING_ADDRESS_KINDS` code: 0 Relay, 1 Bootstrap" },
      { c: "len", type: "u8", label: "address length", doc: "1..192" },
      {
        c: "address",
        type: "u8",
        dims: ["MEETING_ADDRESS_BYTES"],
        doc: "printable ASCII, a multiaddr ending in `/p2p/<peer id>`; zero after `len`",
      },
    ],
  },
  {
    c: "epoch_rates_t",
    title: "EpochRates",
    depth: 4,
    comment: "Points an epoch pays (Psyche's EpochRates).",
    fields: [
      {
        c: "earning_rate_total_shared",
        type: "u64",
        doc: "points shared equally by the clients that finish the epoch Healthy",
      },
      {
        c: "slashing_rate_per_client",
        type: "u64",
        doc: "slashed points of each client dropped or ejected in the epoch (earned ones stay)",
      },
    ],
  },
  {
    c: "join_deposit_t",
    title: "JoinDeposit",
    depth: 4,
    comment: "The run's join deposit: tokens a join puts in the vault (docs/solana-program.md).",
    fields: [
      {
        c: "amount",
        type: "u64",
        doc: "tokens a join without a held deposit pays; 0 = no deposit (the default)",
      },
      { c: "held", type: "u64", doc: "sum of the registrations' deposits" },
      {
        c: "forfeited",
        type: "u64",
        doc: "deposits forfeited and not yet swept; held + forfeited = what the vault owes",
      },
      { c: "mint", type: "u8", dims: [32], doc: "the vault's mint; all zero before the first set" },
      {
        c: "vault",
        type: "u8",
        dims: [32],
        doc: "an SPL token account owned by the vault authority PDA",
      },
      {
        c: "vault_authority_bump",
        type: "u8",
        doc: 'bump of PDA("join_deposit", coordinator key)',
      },
      pad("_pad0", 7),
    ],
  },
  {
    c: "account_t",
    title: "The account",
    notes: 'Version 2 appended the parameter digests (docs/protocol.md, "Parameter digests") ' +
      "after the delegates, so every version 1 offset is unchanged. Version 3 added " +
      'verification (docs/protocol.md, "Verification"): the config\'s bar epochs, each ' +
      "round's rejected trainers, the epoch's open tasks and, at the end, the ejection records; " +
      "the rejected bits moved every offset after the first round. None of these has a place " +
      "in the state encoding's version 1 that the rest of the account is transcribed into; " +
      "`account.ts` reads them beside it, with the checks the state decoder gives them " +
      "(digests: version 3; verification: version 5). Version 4 appended the meeting addresses " +
      "(the relays and bootstrap peers clients meet at, docs/p2p.md) after the ejection " +
      "records, so every version 3 offset is unchanged. Version 5 appended the epoch rates " +
      'and the registrations\' earned points (docs/solana-program.md, "Earned points") after ' +
      "the meeting addresses, so every version 4 offset is unchanged. Version 6 appended the " +
      'join deposit and the registrations\' deposits (docs/solana-program.md, "Join deposit") ' +
      "after the earned points, so every version 5 offset is unchanged. Version 7 appended the " +
      'registrations\' slashed points (docs/solana-program.md, "Slashing") after the deposits, ' +
      "so every version 6 offset is unchanged. Accounts of earlier versions are refused.",
    fields: [
      { c: "magic", type: "u8", dims: [8], doc: "`PSYCOORD` once initialized (all zero before)" },
      {
        c: "version",
        type: "u32",
        doc: "= 7 (1 had no parameter digests, 2 no verification, 3 no meeting addresses, 4 no " +
          "earned points, 5 no join deposit, 6 no slashed points; all are refused)",
      },
      {
        c: "flags",
        type: "u32",
        doc: "bit 0 = permissionless (set at init, never changes); other bits 0",
      },
      { c: "nonce", type: "u64", doc: "1 after init, +1 on every successful instruction" },
      {
        c: "main_authority",
        type: "u8",
        dims: [32],
        doc: "may update, pause/resume and free the run",
      },
      { c: "join_authority", type: "u8", dims: [32], doc: "grants the authorizer" },
      { c: "authorizer", type: "u8", dims: [32], doc: "names delegates; all zero = none" },
      {
        c: "run_id",
        type: "u8",
        dims: ["RUN_ID_BYTES"],
        doc: "UTF-8 bytes, `runIdLen` of them, rest zero",
      },
      { c: "run_id_len", type: "u8", doc: "1..32" },
      { c: "run_state", type: "u8", doc: "`RUN_STATES` code (0 Uninitialized … 7 Paused)" },
      { c: "pending_pause", type: "u8", doc: "0 / 1" },
      pad("_pad0", 1),
      { c: "step", type: "u32", label: "progress.step" },
      {
        c: "epoch_start_data_index",
        type: "u64",
        label: "progress.epochStartDataIndex",
        doc: "≤ 2^53 − 1",
      },
      { c: "epoch", type: "u16", label: "progress.epoch" },
      { c: "registry_len", type: "u16", doc: "registrations in use, ≤ 256" },
      { c: "delegates_len", type: "u16", doc: "≤ 256" },
      pad("_pad1", 2, "u16"),
      { c: "run_state_start_unix_timestamp", type: "u64", doc: "seconds" },
      {
        c: "next_active",
        type: "u64",
        doc: "starts at 1; a registration with `active == nextActive` is pending",
      },
      { c: "config", type: "config_t" },
      { c: "model", type: "model_t" },
      { c: "metadata", type: "metadata_t" },
      { c: "epoch_state", type: "epoch_state_t" },
      { c: "registry", type: "registration_t", dims: ["MAX_CLIENTS"] },
      {
        c: "delegates",
        type: "u8",
        dims: ["MAX_DELEGATES", 32],
        doc: "32-byte keys, the first `delegatesLen` in use",
      },
      {
        c: "digest_records_len",
        type: "u8",
        doc: "recorded parameter digests in use, ≤ 8",
        comment:
          "Version 2: parameter digests (coordinator/core/params_digest.ts), oldest record " +
          "first.",
      },
      { c: "digest_votes_len", type: "u8", doc: "digest votes of the current phase, ≤ 32" },
      {
        c: "ejections_len",
        type: "u8",
        doc: "ejection records in use, ≤ 32 (version 3; was padding)",
      },
      pad("_pad2", 1),
      {
        c: "digest_records",
        type: "digest_record_t",
        dims: ["NUM_DIGEST_RECORDS"],
        doc: "oldest first",
      },
      { c: "digest_votes", type: "digest_vote_t", dims: ["MAX_WITNESSES"] },
      {
        c: "ejections",
        type: "ejection_t",
        dims: ["NUM_EJECTION_RECORDS"],
        doc: "oldest first (version 3)",
        comment: "Version 3: ejection records (coordinator/core/verification.ts), oldest first.",
      },
      pad("_pad3", 4),
      {
        c: "meeting_addresses_len",
        type: "u8",
        doc: "meeting addresses in use, ≤ 4 (version 4)",
        comment: "Version 4: where clients meet (relays, bootstrap peers), set by update.",
      },
      pad("_pad4", 7),
      {
        c: "meeting_addresses",
        type: "meeting_address_t",
        dims: ["MAX_MEETING_ADDRESSES"],
        doc: "in the order the main authority gave them; unused entries zero",
      },
      {
        c: "current_epoch_rates",
        type: "epoch_rates_t",
        doc: "what the current epoch pays: the future rates, copied when it entered Warmup " +
          "(version 5)",
        comment: "Version 5: epoch rates and earned points (docs/solana-program.md).",
      },
      {
        c: "future_epoch_rates",
        type: "epoch_rates_t",
        doc: "set by `set_future_epoch_rates` (version 5)",
      },
      {
        c: "earned",
        type: "u64",
        dims: ["MAX_CLIENTS"],
        doc: "points earned by registration `i`'s wallet, saturating at 2^64 − 1; zero past " +
          "`registryLen` (version 5)",
      },
      {
        c: "join_deposit",
        type: "join_deposit_t",
        doc: "set by `set_join_deposit`; all zero = no deposit (version 6)",
        comment: 'Version 6: the join deposit (docs/solana-program.md, "Join deposit").',
      },
      {
        c: "deposits",
        type: "u64",
        dims: ["MAX_CLIENTS"],
        doc: "the deposit registration `i`'s wallet holds in the vault; zero past `registryLen` " +
          "(version 6)",
      },
      {
        c: "slashed",
        type: "u64",
        dims: ["MAX_CLIENTS"],
        doc: "slashed points of registration `i`'s wallet, saturating at 2^64 − 1; zero past " +
          "`registryLen` (version 7)",
        comment: 'Version 7: the slashed points (docs/solana-program.md, "Slashing").',
      },
    ],
  },
];

/** `"epoch_start_data_index"` → `"epochStartDataIndex"`. */
export function camelCase(c: string): string {
  return c.replace(/_([a-z0-9])/g, (_, ch: string) => ch.toUpperCase());
}

/** A field placed: where it starts and how many bytes it takes. */
export interface PlacedField {
  readonly field: LayoutField;
  readonly offset: number;
  readonly size: number;
  /** Elements (1 for a single value). */
  readonly count: number;
  /** Bytes of one element. */
  readonly elementSize: number;
}

/** A struct placed: its size, alignment, fields, and the offset of each named field. */
export interface StructLayout {
  readonly struct: LayoutStruct;
  readonly size: number;
  readonly align: number;
  readonly fields: readonly PlacedField[];
  /** Offset of each field but the padding, by its TypeScript name. */
  readonly offsets: Readonly<Record<string, number>>;
}

function dimValue(d: number | string): number {
  return typeof d === "number" ? d : layoutConstant(d);
}

const cache = new Map<string, StructLayout>();

/**
 * The layout of struct `c` of `structs` (the account's table unless a test passes its own).
 * Throws RangeError when the table leaves a gap the C compiler would fill (a field off its
 * natural alignment, or a size that is not a multiple of the struct's alignment): padding must
 * be written out.
 */
export function structLayout(
  c: string,
  structs: readonly LayoutStruct[] = LAYOUT_STRUCTS,
): StructLayout {
  const cached = structs === LAYOUT_STRUCTS;
  const hit = cached ? cache.get(c) : undefined;
  if (hit !== undefined) return hit;
  const struct = structs.find((s) => s.c === c);
  if (struct === undefined) throw new RangeError(`No layout struct "${c}"`);
  let at = 0;
  let align = 1;
  const fields: PlacedField[] = [];
  const offsets: Record<string, number> = {};
  for (const field of struct.fields) {
    const scalar = field.type in SCALAR_BYTES;
    const inner = scalar ? null : structLayout(field.type, structs);
    const elementSize = scalar ? SCALAR_BYTES[field.type as Scalar] : inner!.size;
    const fieldAlign = scalar ? SCALAR_BYTES[field.type as Scalar] : inner!.align;
    if (at % fieldAlign !== 0) {
      throw new RangeError(
        `${c}.${field.c} would sit at ${at}, off its ${fieldAlign}-byte alignment: add padding`,
      );
    }
    const count = (field.dims ?? []).reduce<number>((n, d) => n * dimValue(d), 1);
    fields.push({ field, offset: at, size: count * elementSize, count, elementSize });
    if (!field.c.startsWith("_pad")) offsets[camelCase(field.c)] = at;
    at += count * elementSize;
    align = Math.max(align, fieldAlign);
  }
  if (at % align !== 0) {
    throw new RangeError(
      `${c} is ${at} bytes, not a multiple of its alignment ${align}: add padding`,
    );
  }
  const placed = { struct, size: at, align, fields, offsets };
  if (cached) cache.set(c, placed);
  return placed;
}
