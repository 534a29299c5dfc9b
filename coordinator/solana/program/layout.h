/*
 * layout.h: the coordinator account, version 7. A fixed layout (capacity 256 clients),
 * every field naturally aligned, little-endian, no pointers; docs/solana-program.md lists
 * it byte by byte and coordinator/solana/abi/account.ts decodes it. The _Static_asserts pin
 * every offset the documentation and the decoder rely on: changing one is a new version.
 * GENERATED from coordinator/solana/abi/layout.ts by `deno task layout`: edit the table
 * there, not this file (`deno task check` fails when the two differ).
 */
#ifndef PSYCHE_LAYOUT_H
#define PSYCHE_LAYOUT_H

#include "sol.h"

#define ACCOUNT_VERSION 7
#define MAX_CLIENTS 256
#define MAX_WITNESSES 32
#define NUM_ROUNDS 4
#define MAX_BLOOM_KEYS 32
/* Bloom bits at the 256-client cap: ceil(256 * 9.585 / 64) * 64 = 2496 bits. */
#define MAX_BLOOM_BYTES 312
#define MAX_DELEGATES 256
#define RUN_ID_BYTES 32
#define STR_BYTES 64
#define URL_BYTES 192
#define NAME_BYTES 64
#define DESCRIPTION_BYTES 280
/* Longest state-encoding of a data location, learning-rate schedule and optimizer. */
#define DATA_LOCATION_BYTES 296
#define LR_SCHEDULE_BYTES 56
#define OPTIMIZER_BYTES 48
#define NUM_DIGEST_RECORDS 8
#define DIGEST_BYTES 32
/* The witness instruction's optional metadata tail: step u32, four finite f64. */
#define WITNESS_TAIL_BYTES 36
/* 2^53 - 1: the largest u64 the TypeScript side holds as a number (docs/state-encoding.md). */
#define MAX_SAFE_INTEGER 9007199254740991ull
/* Account flags. */
#define FLAG_PERMISSIONLESS 1u
/* A round's rejected trainers: one bit per epoch index. */
#define REJECTED_BYTES 32
#define MAX_VERIFICATION_TASKS 16
/* A task's seats: its Verify stage's, then its TieBreak stage's. */
#define MAX_TASK_SEATS 6
#define VERIFIERS_PER_TASK 3
#define MIN_VERIFIERS_PER_TASK 2
#define MAX_SAMPLES_PER_ROUND 4
#define VERIFICATION_STAGE_ROUNDS 2
#define MAX_COMMITTEE_DRAWS 64
#define NUM_EJECTION_RECORDS 32
/* Evidence codes a report may carry: 0 .. NUM_EVIDENCE_KINDS - 1. */
#define NUM_EVIDENCE_KINDS 7
/* init_coordinator's verificationBarEpochs (the run config's default). */
#define DEFAULT_VERIFICATION_BAR_EPOCHS 4
/* Meeting addresses a run holds (meeting_addresses.ts says why 4 of 192 bytes). */
#define MAX_MEETING_ADDRESSES 4
#define MEETING_ADDRESS_BYTES 192
#define NUM_MEETING_KINDS 2

/* Run states (types.ts RUN_STATES). */
enum {
  RS_UNINITIALIZED = 0,
  RS_WAITING_FOR_MEMBERS = 1,
  RS_WARMUP = 2,
  RS_ROUND_TRAIN = 3,
  RS_ROUND_WITNESS = 4,
  RS_COOLDOWN = 5,
  RS_FINISHED = 6,
  RS_PAUSED = 7,
};

/* Client states (types.ts CLIENT_STATES). */
enum {
  CS_HEALTHY = 0,
  CS_DROPPED = 1,
  CS_WITHDRAWN = 2,
  CS_EJECTED = 3,
};

/* Checkpoint kinds (encoding/layout.ts CHECKPOINT_KINDS). */
enum {
  CK_EPHEMERAL = 0,
  CK_DUMMY = 1,
  CK_HUB = 2,
  CK_P2P = 3,
  CK_GCS = 4,
  CK_P2PGCS = 5,
};

/* Committees. */
enum {
  COMMITTEE_TIE_BREAKER = 0,
  COMMITTEE_VERIFIER = 1,
  COMMITTEE_TRAINER = 2,
};

/* Verification stages (types.ts VERIFICATION_STAGES). */
enum {
  STAGE_VERIFY = 0,
  STAGE_TIE_BREAK = 1,
};

/* A seat's verdict (encoding/layout.ts SEAT_VERDICT_KINDS). */
enum {
  VERDICT_NONE = 0,
  VERDICT_PASS = 1,
  VERDICT_FAIL = 2,
};

/* Verification evidence (types.ts VERIFICATION_EVIDENCE). */
enum {
  EVIDENCE_NONE = 0,
  EVIDENCE_RESULT_MISMATCH = 1,
  EVIDENCE_STATE_MISMATCH = 2,
  EVIDENCE_CHAIN_BREAK = 3,
  EVIDENCE_STATE_UNAVAILABLE = 4,
  EVIDENCE_STATE_INCONSISTENT = 5,
  EVIDENCE_COPIED_RESULT = 6,
};

/* Ejection causes (types.ts EJECTION_CAUSES). */
enum {
  CAUSE_FAILED_VERIFICATION = 0,
  CAUSE_FALSE_ACCUSATION = 1,
  CAUSE_FALSE_VOUCH = 2,
  CAUSE_IDLE_VERIFIER = 3,
  CAUSE_IDLE_WITNESS = 4,
};

/* Meeting address kinds (meeting_addresses.ts MEETING_ADDRESS_KINDS). */
enum {
  MEETING_RELAY = 0,
  MEETING_BOOTSTRAP = 1,
};

typedef struct {
  u64 warmup_time;
  u64 cooldown_time;
  u64 max_round_train_time;
  u64 round_witness_time;
  u64 global_batch_size_warmup_tokens;
  u64 epoch_time;
  u32 total_steps;
  u16 init_min_clients;
  u16 min_clients;
  u16 witness_nodes;
  u16 global_batch_size_start;
  u16 global_batch_size_end;
  u8 verification_percent;
  u8 waiting_for_members_extra_time;
  u16 max_clients;
  u16 verification_bar_epochs;
  u8 _pad[4];
} config_t;
_Static_assert(sizeof(config_t) == 72, "config_t size");
_Static_assert(__builtin_offsetof(config_t, warmup_time) == 0, "config_t.warmup_time");
_Static_assert(__builtin_offsetof(config_t, cooldown_time) == 8, "config_t.cooldown_time");
_Static_assert(__builtin_offsetof(config_t, max_round_train_time) == 16, "config_t.max_round_train_time");
_Static_assert(__builtin_offsetof(config_t, round_witness_time) == 24, "config_t.round_witness_time");
_Static_assert(__builtin_offsetof(config_t, global_batch_size_warmup_tokens) == 32, "config_t.global_batch_size_warmup_tokens");
_Static_assert(__builtin_offsetof(config_t, epoch_time) == 40, "config_t.epoch_time");
_Static_assert(__builtin_offsetof(config_t, total_steps) == 48, "config_t.total_steps");
_Static_assert(__builtin_offsetof(config_t, init_min_clients) == 52, "config_t.init_min_clients");
_Static_assert(__builtin_offsetof(config_t, min_clients) == 54, "config_t.min_clients");
_Static_assert(__builtin_offsetof(config_t, witness_nodes) == 56, "config_t.witness_nodes");
_Static_assert(__builtin_offsetof(config_t, global_batch_size_start) == 58, "config_t.global_batch_size_start");
_Static_assert(__builtin_offsetof(config_t, global_batch_size_end) == 60, "config_t.global_batch_size_end");
_Static_assert(__builtin_offsetof(config_t, verification_percent) == 62, "config_t.verification_percent");
_Static_assert(__builtin_offsetof(config_t, waiting_for_members_extra_time) == 63, "config_t.waiting_for_members_extra_time");
_Static_assert(__builtin_offsetof(config_t, max_clients) == 64, "config_t.max_clients");
_Static_assert(__builtin_offsetof(config_t, verification_bar_epochs) == 66, "config_t.verification_bar_epochs");

/* Hub repos use (repo_id, revision), Gcs repos (bucket, prefix). */
typedef struct {
  u8 kind;
  u8 has_second;
  u8 first_len;
  u8 second_len;
  u8 first[STR_BYTES];
  u8 second[STR_BYTES];
} checkpoint_t;
_Static_assert(sizeof(checkpoint_t) == 132, "checkpoint_t size");
_Static_assert(__builtin_offsetof(checkpoint_t, kind) == 0, "checkpoint_t.kind");
_Static_assert(__builtin_offsetof(checkpoint_t, has_second) == 1, "checkpoint_t.has_second");
_Static_assert(__builtin_offsetof(checkpoint_t, first_len) == 2, "checkpoint_t.first_len");
_Static_assert(__builtin_offsetof(checkpoint_t, second_len) == 3, "checkpoint_t.second_len");
_Static_assert(__builtin_offsetof(checkpoint_t, first) == 4, "checkpoint_t.first");
_Static_assert(__builtin_offsetof(checkpoint_t, second) == 68, "checkpoint_t.second");

/* dataLocation, lrSchedule and optimizer are stored as their state-encoding bytes. */
typedef struct {
  u8 architecture;
  u8 data_type;
  u16 data_location_len;
  u32 max_seq_len;
  u32 cold_start_warmup_steps;
  u16 lr_schedule_len;
  u16 optimizer_len;
  checkpoint_t checkpoint;
  u8 data_location[DATA_LOCATION_BYTES];
  u8 lr_schedule[LR_SCHEDULE_BYTES];
  u8 optimizer[OPTIMIZER_BYTES];
  u8 snapshot_dtype;
  u8 _pad[3];
} model_t;
_Static_assert(sizeof(model_t) == 552, "model_t size");
_Static_assert(__builtin_offsetof(model_t, architecture) == 0, "model_t.architecture");
_Static_assert(__builtin_offsetof(model_t, data_type) == 1, "model_t.data_type");
_Static_assert(__builtin_offsetof(model_t, data_location_len) == 2, "model_t.data_location_len");
_Static_assert(__builtin_offsetof(model_t, max_seq_len) == 4, "model_t.max_seq_len");
_Static_assert(__builtin_offsetof(model_t, cold_start_warmup_steps) == 8, "model_t.cold_start_warmup_steps");
_Static_assert(__builtin_offsetof(model_t, lr_schedule_len) == 12, "model_t.lr_schedule_len");
_Static_assert(__builtin_offsetof(model_t, optimizer_len) == 14, "model_t.optimizer_len");
_Static_assert(__builtin_offsetof(model_t, checkpoint) == 16, "model_t.checkpoint");
_Static_assert(__builtin_offsetof(model_t, data_location) == 148, "model_t.data_location");
_Static_assert(__builtin_offsetof(model_t, lr_schedule) == 444, "model_t.lr_schedule");
_Static_assert(__builtin_offsetof(model_t, optimizer) == 500, "model_t.optimizer");
_Static_assert(__builtin_offsetof(model_t, snapshot_dtype) == 548, "model_t.snapshot_dtype");

typedef struct {
  u64 num_parameters;
  u64 vocab_size;
  u16 description_len;
  u8 name_len;
  u8 _pad[5];
  u8 name[NAME_BYTES];
  u8 description[DESCRIPTION_BYTES];
} metadata_t;
_Static_assert(sizeof(metadata_t) == 368, "metadata_t size");
_Static_assert(__builtin_offsetof(metadata_t, num_parameters) == 0, "metadata_t.num_parameters");
_Static_assert(__builtin_offsetof(metadata_t, vocab_size) == 8, "metadata_t.vocab_size");
_Static_assert(__builtin_offsetof(metadata_t, description_len) == 16, "metadata_t.description_len");
_Static_assert(__builtin_offsetof(metadata_t, name_len) == 18, "metadata_t.name_len");
_Static_assert(__builtin_offsetof(metadata_t, name) == 24, "metadata_t.name");
_Static_assert(__builtin_offsetof(metadata_t, description) == 88, "metadata_t.description");

typedef struct {
  u64 keys[MAX_BLOOM_KEYS];
  u8 bits[MAX_BLOOM_BYTES];
} bloom_t;
_Static_assert(sizeof(bloom_t) == 568, "bloom_t size");
_Static_assert(__builtin_offsetof(bloom_t, keys) == 0, "bloom_t.keys");
_Static_assert(__builtin_offsetof(bloom_t, bits) == 256, "bloom_t.bits");

typedef struct {
  u32 position;
  u32 index;
  u8 witness;
  u8 _pad[7];
  bloom_t participant;
  bloom_t broadcast;
  u8 merkle[32];
} witness_t;
_Static_assert(sizeof(witness_t) == 1184, "witness_t size");
_Static_assert(__builtin_offsetof(witness_t, position) == 0, "witness_t.position");
_Static_assert(__builtin_offsetof(witness_t, index) == 4, "witness_t.index");
_Static_assert(__builtin_offsetof(witness_t, witness) == 8, "witness_t.witness");
_Static_assert(__builtin_offsetof(witness_t, participant) == 16, "witness_t.participant");
_Static_assert(__builtin_offsetof(witness_t, broadcast) == 584, "witness_t.broadcast");
_Static_assert(__builtin_offsetof(witness_t, merkle) == 1152, "witness_t.merkle");

typedef struct {
  u64 data_index;
  u64 random_seed;
  u32 height;
  u16 clients_len;
  u16 tie_breaker_tasks;
  u8 witnesses_len;
  u8 _pad[7];
  u8 rejected[REJECTED_BYTES];
  witness_t witnesses[MAX_WITNESSES];
} round_t;
_Static_assert(sizeof(round_t) == 37952, "round_t size");
_Static_assert(__builtin_offsetof(round_t, data_index) == 0, "round_t.data_index");
_Static_assert(__builtin_offsetof(round_t, random_seed) == 8, "round_t.random_seed");
_Static_assert(__builtin_offsetof(round_t, height) == 16, "round_t.height");
_Static_assert(__builtin_offsetof(round_t, clients_len) == 20, "round_t.clients_len");
_Static_assert(__builtin_offsetof(round_t, tie_breaker_tasks) == 22, "round_t.tie_breaker_tasks");
_Static_assert(__builtin_offsetof(round_t, witnesses_len) == 24, "round_t.witnesses_len");
_Static_assert(__builtin_offsetof(round_t, rejected) == 32, "round_t.rejected");
_Static_assert(__builtin_offsetof(round_t, witnesses) == 64, "round_t.witnesses");

typedef struct {
  u8 signer[32];
  u8 p2p[32];
  u32 exited_height;
  u16 epoch_index;
  u8 state;
  u8 _pad;
} client_t;
_Static_assert(sizeof(client_t) == 72, "client_t size");
_Static_assert(__builtin_offsetof(client_t, signer) == 0, "client_t.signer");
_Static_assert(__builtin_offsetof(client_t, p2p) == 32, "client_t.p2p");
_Static_assert(__builtin_offsetof(client_t, exited_height) == 64, "client_t.exited_height");
_Static_assert(__builtin_offsetof(client_t, epoch_index) == 68, "client_t.epoch_index");
_Static_assert(__builtin_offsetof(client_t, state) == 70, "client_t.state");

/* One verifier's seat of a task, and its report (types.ts VerificationSeat). */
typedef struct {
  u16 verifier;
  u8 stage;
  u8 verdict;
  u8 evidence;
  u8 _pad[3];
  u32 detail;
} seat_t;
_Static_assert(sizeof(seat_t) == 12, "seat_t size");
_Static_assert(__builtin_offsetof(seat_t, verifier) == 0, "seat_t.verifier");
_Static_assert(__builtin_offsetof(seat_t, stage) == 2, "seat_t.stage");
_Static_assert(__builtin_offsetof(seat_t, verdict) == 3, "seat_t.verdict");
_Static_assert(__builtin_offsetof(seat_t, evidence) == 4, "seat_t.evidence");
_Static_assert(__builtin_offsetof(seat_t, detail) == 8, "seat_t.detail");

/* A sampled result under verification (types.ts VerificationTask). */
typedef struct {
  u64 opened_at;
  u32 height;
  u32 deadline;
  u16 trainer;
  u8 stage;
  u8 seats_len;
  seat_t seats[MAX_TASK_SEATS];
  u8 decided;
  u8 _pad[3];
} task_t;
_Static_assert(sizeof(task_t) == 96, "task_t size");
_Static_assert(__builtin_offsetof(task_t, opened_at) == 0, "task_t.opened_at");
_Static_assert(__builtin_offsetof(task_t, height) == 8, "task_t.height");
_Static_assert(__builtin_offsetof(task_t, deadline) == 12, "task_t.deadline");
_Static_assert(__builtin_offsetof(task_t, trainer) == 16, "task_t.trainer");
_Static_assert(__builtin_offsetof(task_t, stage) == 18, "task_t.stage");
_Static_assert(__builtin_offsetof(task_t, seats_len) == 19, "task_t.seats_len");
_Static_assert(__builtin_offsetof(task_t, seats) == 20, "task_t.seats");
_Static_assert(__builtin_offsetof(task_t, decided) == 92, "task_t.decided");

/* A client ejected by verification (types.ts EjectionRecord). */
typedef struct {
  u8 signer[32];
  u32 step;
  u16 epoch;
  u16 barred_until;
  u8 cause;
  u8 evidence;
  u8 _pad[2];
} ejection_t;
_Static_assert(sizeof(ejection_t) == 44, "ejection_t size");
_Static_assert(__builtin_offsetof(ejection_t, signer) == 0, "ejection_t.signer");
_Static_assert(__builtin_offsetof(ejection_t, step) == 32, "ejection_t.step");
_Static_assert(__builtin_offsetof(ejection_t, epoch) == 36, "ejection_t.epoch");
_Static_assert(__builtin_offsetof(ejection_t, barred_until) == 38, "ejection_t.barred_until");
_Static_assert(__builtin_offsetof(ejection_t, cause) == 40, "ejection_t.cause");
_Static_assert(__builtin_offsetof(ejection_t, evidence) == 41, "ejection_t.evidence");

typedef struct {
  u32 start_step;
  u32 last_step;
  u64 start_timestamp;
  u16 clients_len;
  u16 exited_len;
  u8 rounds_head;
  u8 first_round;
  u8 cold_start_epoch;
  u8 verification_tasks_len;
  round_t rounds[NUM_ROUNDS];
  client_t clients[MAX_CLIENTS];
  client_t exited[MAX_CLIENTS];
  task_t verification_tasks[MAX_VERIFICATION_TASKS];
} epoch_state_t;
_Static_assert(sizeof(epoch_state_t) == 190232, "epoch_state_t size");
_Static_assert(__builtin_offsetof(epoch_state_t, start_step) == 0, "epoch_state_t.start_step");
_Static_assert(__builtin_offsetof(epoch_state_t, last_step) == 4, "epoch_state_t.last_step");
_Static_assert(__builtin_offsetof(epoch_state_t, start_timestamp) == 8, "epoch_state_t.start_timestamp");
_Static_assert(__builtin_offsetof(epoch_state_t, clients_len) == 16, "epoch_state_t.clients_len");
_Static_assert(__builtin_offsetof(epoch_state_t, exited_len) == 18, "epoch_state_t.exited_len");
_Static_assert(__builtin_offsetof(epoch_state_t, rounds_head) == 20, "epoch_state_t.rounds_head");
_Static_assert(__builtin_offsetof(epoch_state_t, first_round) == 21, "epoch_state_t.first_round");
_Static_assert(__builtin_offsetof(epoch_state_t, cold_start_epoch) == 22, "epoch_state_t.cold_start_epoch");
_Static_assert(__builtin_offsetof(epoch_state_t, verification_tasks_len) == 23, "epoch_state_t.verification_tasks_len");
_Static_assert(__builtin_offsetof(epoch_state_t, rounds) == 24, "epoch_state_t.rounds");
_Static_assert(__builtin_offsetof(epoch_state_t, clients) == 151832, "epoch_state_t.clients");
_Static_assert(__builtin_offsetof(epoch_state_t, exited) == 170264, "epoch_state_t.exited");
_Static_assert(__builtin_offsetof(epoch_state_t, verification_tasks) == 188696, "epoch_state_t.verification_tasks");

/* A client that joined for epoch `active` (the account's next_active when it joined). */
typedef struct {
  u8 signer[32];
  u8 p2p[32];
  u64 active;
} registration_t;
_Static_assert(sizeof(registration_t) == 72, "registration_t size");
_Static_assert(__builtin_offsetof(registration_t, signer) == 0, "registration_t.signer");
_Static_assert(__builtin_offsetof(registration_t, p2p) == 32, "registration_t.p2p");
_Static_assert(__builtin_offsetof(registration_t, active) == 64, "registration_t.active");

/* A digest a quorum reported for the parameters of `step` (types.ts DigestRecord). */
typedef struct {
  u32 step;
  u8 digest[DIGEST_BYTES];
} digest_record_t;
_Static_assert(sizeof(digest_record_t) == 36, "digest_record_t size");
_Static_assert(__builtin_offsetof(digest_record_t, step) == 0, "digest_record_t.step");
_Static_assert(__builtin_offsetof(digest_record_t, digest) == 4, "digest_record_t.digest");

/* One client's digest vote in the current phase (types.ts DigestVote). */
typedef struct {
  u16 index;
  u8 digest[DIGEST_BYTES];
} digest_vote_t;
_Static_assert(sizeof(digest_vote_t) == 34, "digest_vote_t size");
_Static_assert(__builtin_offsetof(digest_vote_t, index) == 0, "digest_vote_t.index");
_Static_assert(__builtin_offsetof(digest_vote_t, digest) == 2, "digest_vote_t.digest");

/* Where the run's clients meet (meeting_addresses.ts MeetingAddress). */
typedef struct {
  u8 kind;
  u8 len;
  u8 address[MEETING_ADDRESS_BYTES];
} meeting_address_t;
_Static_assert(sizeof(meeting_address_t) == 194, "meeting_address_t size");
_Static_assert(__builtin_offsetof(meeting_address_t, kind) == 0, "meeting_address_t.kind");
_Static_assert(__builtin_offsetof(meeting_address_t, len) == 1, "meeting_address_t.len");
_Static_assert(__builtin_offsetof(meeting_address_t, address) == 2, "meeting_address_t.address");

/* Points an epoch pays (Psyche's EpochRates). */
typedef struct {
  u64 earning_rate_total_shared;
  u64 slashing_rate_per_client;
} epoch_rates_t;
_Static_assert(sizeof(epoch_rates_t) == 16, "epoch_rates_t size");
_Static_assert(__builtin_offsetof(epoch_rates_t, earning_rate_total_shared) == 0, "epoch_rates_t.earning_rate_total_shared");
_Static_assert(__builtin_offsetof(epoch_rates_t, slashing_rate_per_client) == 8, "epoch_rates_t.slashing_rate_per_client");

/* The run's join deposit: tokens a join puts in the vault (docs/solana-program.md). */
typedef struct {
  u64 amount;
  u64 held;
  u64 forfeited;
  u8 mint[32];
  u8 vault[32];
  u8 vault_authority_bump;
  u8 _pad0[7];
} join_deposit_t;
_Static_assert(sizeof(join_deposit_t) == 96, "join_deposit_t size");
_Static_assert(__builtin_offsetof(join_deposit_t, amount) == 0, "join_deposit_t.amount");
_Static_assert(__builtin_offsetof(join_deposit_t, held) == 8, "join_deposit_t.held");
_Static_assert(__builtin_offsetof(join_deposit_t, forfeited) == 16, "join_deposit_t.forfeited");
_Static_assert(__builtin_offsetof(join_deposit_t, mint) == 24, "join_deposit_t.mint");
_Static_assert(__builtin_offsetof(join_deposit_t, vault) == 56, "join_deposit_t.vault");
_Static_assert(__builtin_offsetof(join_deposit_t, vault_authority_bump) == 88, "join_deposit_t.vault_authority_bump");

typedef struct {
  u8 magic[8];
  u32 version;
  u32 flags;
  u64 nonce;
  u8 main_authority[32];
  u8 join_authority[32];
  u8 authorizer[32];
  u8 run_id[RUN_ID_BYTES];
  u8 run_id_len;
  u8 run_state;
  u8 pending_pause;
  u8 _pad0;
  u32 step;
  u64 epoch_start_data_index;
  u16 epoch;
  u16 registry_len;
  u16 delegates_len;
  u16 _pad1;
  u64 run_state_start_unix_timestamp;
  u64 next_active;
  config_t config;
  model_t model;
  metadata_t metadata;
  epoch_state_t epoch_state;
  registration_t registry[MAX_CLIENTS];
  u8 delegates[MAX_DELEGATES][32];
  /* Version 2: parameter digests (coordinator/core/params_digest.ts), oldest record first. */
  u8 digest_records_len;
  u8 digest_votes_len;
  u8 ejections_len;
  u8 _pad2;
  digest_record_t digest_records[NUM_DIGEST_RECORDS];
  digest_vote_t digest_votes[MAX_WITNESSES];
  /* Version 3: ejection records (coordinator/core/verification.ts), oldest first. */
  ejection_t ejections[NUM_EJECTION_RECORDS];
  u8 _pad3[4];
  /* Version 4: where clients meet (relays, bootstrap peers), set by update. */
  u8 meeting_addresses_len;
  u8 _pad4[7];
  meeting_address_t meeting_addresses[MAX_MEETING_ADDRESSES];
  /* Version 5: epoch rates and earned points (docs/solana-program.md). */
  epoch_rates_t current_epoch_rates;
  epoch_rates_t future_epoch_rates;
  u64 earned[MAX_CLIENTS];
  /* Version 6: the join deposit (docs/solana-program.md, "Join deposit"). */
  join_deposit_t join_deposit;
  u64 deposits[MAX_CLIENTS];
  /* Version 7: the slashed points (docs/solana-program.md, "Slashing"). */
  u64 slashed[MAX_CLIENTS];
} account_t;
_Static_assert(sizeof(account_t) == 227888, "account_t size");
_Static_assert(__builtin_offsetof(account_t, magic) == 0, "account_t.magic");
_Static_assert(__builtin_offsetof(account_t, version) == 8, "account_t.version");
_Static_assert(__builtin_offsetof(account_t, flags) == 12, "account_t.flags");
_Static_assert(__builtin_offsetof(account_t, nonce) == 16, "account_t.nonce");
_Static_assert(__builtin_offsetof(account_t, main_authority) == 24, "account_t.main_authority");
_Static_assert(__builtin_offsetof(account_t, join_authority) == 56, "account_t.join_authority");
_Static_assert(__builtin_offsetof(account_t, authorizer) == 88, "account_t.authorizer");
_Static_assert(__builtin_offsetof(account_t, run_id) == 120, "account_t.run_id");
_Static_assert(__builtin_offsetof(account_t, run_id_len) == 152, "account_t.run_id_len");
_Static_assert(__builtin_offsetof(account_t, run_state) == 153, "account_t.run_state");
_Static_assert(__builtin_offsetof(account_t, pending_pause) == 154, "account_t.pending_pause");
_Static_assert(__builtin_offsetof(account_t, step) == 156, "account_t.step");
_Static_assert(__builtin_offsetof(account_t, epoch_start_data_index) == 160, "account_t.epoch_start_data_index");
_Static_assert(__builtin_offsetof(account_t, epoch) == 168, "account_t.epoch");
_Static_assert(__builtin_offsetof(account_t, registry_len) == 170, "account_t.registry_len");
_Static_assert(__builtin_offsetof(account_t, delegates_len) == 172, "account_t.delegates_len");
_Static_assert(__builtin_offsetof(account_t, run_state_start_unix_timestamp) == 176, "account_t.run_state_start_unix_timestamp");
_Static_assert(__builtin_offsetof(account_t, next_active) == 184, "account_t.next_active");
_Static_assert(__builtin_offsetof(account_t, config) == 192, "account_t.config");
_Static_assert(__builtin_offsetof(account_t, model) == 264, "account_t.model");
_Static_assert(__builtin_offsetof(account_t, metadata) == 816, "account_t.metadata");
_Static_assert(__builtin_offsetof(account_t, epoch_state) == 1184, "account_t.epoch_state");
_Static_assert(__builtin_offsetof(account_t, registry) == 191416, "account_t.registry");
_Static_assert(__builtin_offsetof(account_t, delegates) == 209848, "account_t.delegates");
_Static_assert(__builtin_offsetof(account_t, digest_records_len) == 218040, "account_t.digest_records_len");
_Static_assert(__builtin_offsetof(account_t, digest_votes_len) == 218041, "account_t.digest_votes_len");
_Static_assert(__builtin_offsetof(account_t, ejections_len) == 218042, "account_t.ejections_len");
_Static_assert(__builtin_offsetof(account_t, digest_records) == 218044, "account_t.digest_records");
_Static_assert(__builtin_offsetof(account_t, digest_votes) == 218332, "account_t.digest_votes");
_Static_assert(__builtin_offsetof(account_t, ejections) == 219420, "account_t.ejections");
_Static_assert(__builtin_offsetof(account_t, meeting_addresses_len) == 220832, "account_t.meeting_addresses_len");
_Static_assert(__builtin_offsetof(account_t, meeting_addresses) == 220840, "account_t.meeting_addresses");
_Static_assert(__builtin_offsetof(account_t, current_epoch_rates) == 221616, "account_t.current_epoch_rates");
_Static_assert(__builtin_offsetof(account_t, future_epoch_rates) == 221632, "account_t.future_epoch_rates");
_Static_assert(__builtin_offsetof(account_t, earned) == 221648, "account_t.earned");
_Static_assert(__builtin_offsetof(account_t, join_deposit) == 223696, "account_t.join_deposit");
_Static_assert(__builtin_offsetof(account_t, deposits) == 223792, "account_t.deposits");
_Static_assert(__builtin_offsetof(account_t, slashed) == 225840, "account_t.slashed");

/* "PSYCOORD": written by init_coordinator, checked by every other instruction. */
static const u8 ACCOUNT_MAGIC[8] = {'P', 'S', 'Y', 'C', 'O', 'O', 'R', 'D'};

/* Error codes: 6000 + CoordinatorError number (coordinator/core/errors.ts), then the program's. */
enum {
  E_HALTED = 6000,
  E_WRONG_RUN_STATE,
  E_INVALID_WITNESS,
  E_DUPLICATE_WITNESS,
  E_WITNESSES_FULL,
  E_INVALID_HEALTH_CHECK,
  E_INVALID_COMMITTEE_PROOF,
  E_INVALID_WITHDRAW,
  E_INVALID_CHECKPOINT,
  E_CANNOT_RESUME,
  E_INVALID_VERIFICATION,
};

enum {
  E_INVALID_INSTRUCTION = 6100,
  E_NOT_ENOUGH_ACCOUNTS,
  E_INVALID_COORDINATOR_ACCOUNT,
  E_ALREADY_INITIALIZED,
  E_MISSING_SIGNATURE,
  E_NOT_MAIN_AUTHORITY,
  E_NOT_JOIN_AUTHORITY,
  E_NOT_AUTHORIZER,
  E_NOT_AUTHORIZED_TO_JOIN,
  E_CLIENTS_FULL,
  E_MORE_CLIENTS_THAN_BATCHES,
  E_INVALID_RUN_ID,
  E_INVALID_CONFIG,
  E_INVALID_MODEL,
  E_INVALID_PROGRESS,
  E_NOT_HALTED,
  E_RUN_FINISHED,
  E_DELEGATES_FULL,
  E_WRONG_COORDINATOR_ADDRESS,
  E_MAX_CLIENTS_FIXED,
  E_INVALID_METADATA,
  E_INVALID_CLOCK,
  E_INVALID_SPILL_ACCOUNT,
  E_INVALID_DATA_LOCATION,
  E_INVALID_MODEL_CHECKPOINT,
  E_INVALID_LR_SCHEDULE,
  E_INVALID_OPTIMIZER,
  E_INVALID_MEETING_ADDRESS,
  E_DEPOSIT_REQUIRED,
  E_INVALID_DEPOSIT_ACCOUNTS,
  E_INSUFFICIENT_DEPOSIT,
  E_DEPOSIT_VAULT_IN_USE,
  E_NO_DEPOSIT,
  E_DEPOSIT_LOCKED,
};

#endif
