/*
 * The Psyche coordinator as a Solana program (SBPF v0), in freestanding C.
 *
 * Built as one translation unit (the linker takes one object): this file includes the
 * runtime (sol.h), the account layout (layout.h), the codecs, committee selection,
 * validation, the state machine and verification, then dispatches instructions. The state machine is
 * a transcription of the TypeScript reference in coordinator/ and the differential tests
 * (coordinator/solana/program/differential_test.ts) hold the two to the same states.
 *
 * Instruction data: a u8 tag, then the fields of that instruction, little-endian and
 * packed (docs/solana-program.md). Errors: 6000 + CoordinatorError number, 6100 + the
 * program's own (layout.h).
 */
#include "sol.h"
#include "layout.h"
/* The join deposit's CPIs; the pool's helpers this program does not call are not warned about. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-function"
#include "sol_cpi.h"
#include "spl_token.h"
#pragma clang diagnostic pop

#include "codec.c"
#include "selection.c"
#include "machine.c"
#include "verification.c"
#include "model_rules.c"
#include "validate.c"
#include "meeting.c"
#include "rewards.c"
#include "deposit.c"
#include "epoch_end.c"

enum {
  IX_INIT_COORDINATOR = 0,
  IX_UPDATE = 1,
  IX_SET_PAUSED = 2,
  IX_JOIN_RUN = 3,
  IX_TICK = 4,
  IX_WITNESS = 5,
  IX_WARMUP_WITNESS = 6,
  IX_HEALTH_CHECK = 7,
  IX_CHECKPOINT = 8,
  IX_FREE_COORDINATOR = 9,
  IX_GRANT_AUTHORIZER = 10,
  IX_SET_DELEGATES = 11,
  IX_COOLDOWN_WITNESS = 12,
  IX_VERIFICATION_REPORT = 13,
  IX_SET_FUTURE_EPOCH_RATES = 14,
  IX_SET_JOIN_DEPOSIT = 15,
  IX_WITHDRAW_DEPOSIT = 16,
  IX_SWEEP_FORFEITED = 17,
};

/* Update parts (bit flags of the update instruction's first byte). */
#define UPDATE_METADATA 1u
#define UPDATE_CONFIG 2u
#define UPDATE_MODEL 4u
#define UPDATE_PROGRESS 8u
#define UPDATE_MEETING 16u
#define UPDATE_ALL_PARTS 0x1fu

/* The update's config: the state encoding's version 1 config (66 bytes), then the bar epochs
   (u16): config_t's first 68 bytes. */
#define CONFIG_WIRE_BYTES 68
_Static_assert(__builtin_offsetof(config_t, verification_bar_epochs) + 2 == CONFIG_WIRE_BYTES,
               "the config wire is config_t up to its bar epochs");

static u64 clock_now(u64 *now, u64 *seed) {
  sol_clock_t clock;
  if (sol_get_clock_sysvar(&clock) != 0) return E_INVALID_CLOCK;
  if (clock.unix_timestamp < 0 || (u64)clock.unix_timestamp > MAX_SAFE_INTEGER) {
    LOG("clock: unix timestamp outside [0, 2^53-1]");
    return E_INVALID_CLOCK;
  }
  *now = (u64)clock.unix_timestamp;
  /* Psyche's get_random_seed (solana-coordinator/src/instance_state.rs):
     u64le(sha256(i64le(unix_timestamp) || u64le(slot))[0..8]). */
  u8 buf[16], digest[32];
  wr64(buf, (u64)clock.unix_timestamp);
  wr64(buf + 8, clock.slot);
  sha256_2(buf, 16, NULL, 0, digest);
  *seed = rd64(digest);
  return 0;
}

static u64 coordinator_account(const input_t *in, account_t **out) {
  if (in->num_accounts < 1) return E_NOT_ENOUGH_ACCOUNTS;
  const account_info_t *info = &in->accounts[0];
  if (!mem_eq(info->owner, in->program_id, 32) || info->data_len != sizeof(account_t) ||
      !info->is_writable) {
    LOG("coordinator account: not a writable account of this program with the layout's size");
    return E_INVALID_COORDINATOR_ACCOUNT;
  }
  account_t *a = (account_t *)info->data;
  if (!mem_eq(a->magic, ACCOUNT_MAGIC, 8) || a->version != ACCOUNT_VERSION) {
    LOG("coordinator account: not initialized, or another layout version");
    return E_INVALID_COORDINATOR_ACCOUNT;
  }
  *out = a;
  return 0;
}

/* Account 1 must sign; when `expected` is given it must be that key. */
static u64 signer(const input_t *in, const u8 *expected, u64 wrong_key_error, const u8 **out) {
  if (in->num_accounts < 2) return E_NOT_ENOUGH_ACCOUNTS;
  const account_info_t *info = &in->accounts[1];
  if (!info->is_signer) {
    LOG("account 1 must sign the transaction");
    return E_MISSING_SIGNATURE;
  }
  if (expected != NULL && !mem_eq(info->key, expected, 32)) return wrong_key_error;
  *out = info->key;
  return 0;
}

static u64 init_coordinator(const input_t *in, reader_t *r) {
  if (in->num_accounts < 2) return E_NOT_ENOUGH_ACCOUNTS;
  const account_info_t *info = &in->accounts[0];
  u8 run_id_len = get8(r);
  const u8 *run_id = take(r, run_id_len);
  const u8 *join_authority = take(r, 32);
  u8 flags = get8(r);
  if (!r->ok || r->pos != r->len || (flags & ~FLAG_PERMISSIONLESS) != 0) return E_INVALID_INSTRUCTION;
  if (run_id_len == 0 || run_id_len > RUN_ID_BYTES || !utf8_valid(run_id, run_id_len)) {
    LOG("init: run id must be 1..32 bytes of UTF-8");
    return E_INVALID_RUN_ID;
  }
  const u8 *main_authority;
  u64 err = signer(in, NULL, 0, &main_authority);
  if (err) return err;
  if (!mem_eq(info->owner, in->program_id, 32) || info->data_len != sizeof(account_t) ||
      !info->is_writable) {
    LOG("init: the coordinator account must be writable, owned by this program, of the layout's size");
    return E_INVALID_COORDINATOR_ACCOUNT;
  }
  account_t *a = (account_t *)info->data;
  if (!is_zero(a->magic, 8)) return E_ALREADY_INITIALIZED;
  /* The account lives at createWithSeed(main authority, run id, program id). */
  u8 expected[32];
  sol_bytes_t parts[3] = {{main_authority, 32}, {run_id, run_id_len}, {in->program_id, 32}};
  sol_sha256(parts, 3, expected);
  if (!mem_eq(expected, info->key, 32)) {
    LOG("init: the account is not at createWithSeed(main authority, run id, program)");
    return E_WRONG_COORDINATOR_ADDRESS;
  }
  mem_copy(a->magic, ACCOUNT_MAGIC, 8);
  a->version = ACCOUNT_VERSION;
  a->flags = flags;
  a->nonce = 1;
  mem_copy(a->main_authority, main_authority, 32);
  mem_copy(a->join_authority, join_authority, 32);
  mem_copy(a->run_id, run_id, run_id_len);
  a->run_id_len = run_id_len;
  a->run_state = RS_UNINITIALIZED;
  a->step = 1;
  a->next_active = 1;
  a->config.max_clients = MAX_CLIENTS;
  a->config.verification_bar_epochs = DEFAULT_VERIFICATION_BAR_EPOCHS;
  /* An unset model decodes as Dummy data, Ephemeral checkpoint, Constant(0) schedule, Dummy optimizer. */
  a->model.data_location_len = 1;
  a->model.lr_schedule_len = 21;
  a->model.optimizer_len = 1;
  return 0;
}

static u64 update(account_t *a, reader_t *r) {
  u8 parts = get8(r);
  if (!r->ok || parts == 0 || (parts & ~UPDATE_ALL_PARTS) != 0) return E_INVALID_INSTRUCTION;
  bool has_meta = parts & UPDATE_METADATA, has_config = parts & UPDATE_CONFIG;
  bool has_model = parts & UPDATE_MODEL, has_progress = parts & UPDATE_PROGRESS;
  bool has_meeting = parts & UPDATE_MEETING;
  meeting_part_t meeting = {NULL, 0, 0};
  const u8 *name = NULL, *description = NULL, *config_bytes = NULL, *model_bytes = NULL;
  u8 name_len = 0;
  u16 description_len = 0, model_len = 0;
  u64 num_parameters = 0, vocab_size = 0, edi = 0;
  u16 epoch = 0;
  u32 step = 0;
  if (has_meta) {
    name_len = get8(r);
    name = take(r, name_len);
    description_len = get16(r);
    description = take(r, description_len);
    num_parameters = get64(r);
    vocab_size = get64(r);
  }
  if (has_config) config_bytes = take(r, CONFIG_WIRE_BYTES);
  if (has_model) {
    model_len = get16(r);
    model_bytes = take(r, model_len);
  }
  if (has_progress) {
    epoch = get16(r);
    step = get32(r);
    edi = get64(r);
  }
  if (has_meeting) get_meeting_part(r, &meeting);
  if (!r->ok || r->pos != r->len) return E_INVALID_INSTRUCTION;
  if (has_meta && (name_len > NAME_BYTES || description_len > DESCRIPTION_BYTES ||
                   !utf8_valid(name, name_len) || !utf8_valid(description, description_len) ||
                   num_parameters > MAX_SAFE_INTEGER || vocab_size > MAX_SAFE_INTEGER)) {
    LOG("update: metadata name is at most 64 and description at most 280 bytes of UTF-8, "
        "numbers at most 2^53-1");
    return E_INVALID_METADATA;
  }
  u64 err;
  /* Like metadata, meeting addresses may change in any run state. */
  if (has_meeting && (err = meeting_check(&meeting))) return err;
  if (has_config || has_model || has_progress) {
    if (a->run_state == RS_FINISHED) return E_RUN_FINISHED;
    if (!is_halted(a)) return E_NOT_HALTED;
  }
  config_t config;
  model_t model;
  if (has_config) {
    mem_zero(&config, sizeof(config));
    mem_copy(&config, config_bytes, CONFIG_WIRE_BYTES);
    if ((err = validate_config(&config))) return err;
    if (a->run_state != RS_UNINITIALIZED && config.max_clients != a->config.max_clients) {
      LOG("update: config.maxClients can only change before the run starts");
      return E_MAX_CLIENTS_FIXED;
    }
  }
  if (has_model) {
    if (!parse_model(model_bytes, model_len, &model)) return E_INVALID_MODEL;
    if ((err = validate_model(&model))) return err;
  }
  if (has_progress && (err = validate_progress(step, edi))) return err;
  if (a->run_state == RS_PAUSED && (has_config || has_model)) {
    if ((err = validate_cold_start(has_model ? &model : &a->model, has_config ? &config : &a->config)))
      return err;
  }
  if (has_meta) {
    metadata_t *m = &a->metadata;
    mem_zero(m, sizeof(metadata_t));
    m->name_len = name_len;
    mem_copy(m->name, name, name_len);
    m->description_len = description_len;
    mem_copy(m->description, description, description_len);
    m->num_parameters = num_parameters;
    m->vocab_size = vocab_size;
  }
  if (has_meeting) meeting_store(a, &meeting);
  if (has_config) mem_copy(&a->config, &config, sizeof(config));
  if (has_model) mem_copy(&a->model, &model, sizeof(model));
  if (has_progress) {
    a->epoch = epoch;
    a->step = step;
    a->epoch_start_data_index = edi;
    /* Digests recorded for other steps say nothing about the run from the new progress. */
    mem_zero(a->digest_records, sizeof(a->digest_records));
    a->digest_records_len = 0;
  }
  return 0;
}

static u64 set_paused(account_t *a, reader_t *r) {
  u8 paused = get8(r);
  if (!r->ok || r->pos != r->len || paused > 1) return E_INVALID_INSTRUCTION;
  u64 now, seed, err;
  if ((err = clock_now(&now, &seed))) return err;
  if (paused) return pause(a, now);
  if (a->run_state == RS_PAUSED || a->run_state == RS_UNINITIALIZED) {
    if ((err = validate_all(a))) return err;
  }
  return resume(a, now);
}

static bool may_join(const account_t *a, const u8 *user) {
  if (a->flags & FLAG_PERMISSIONLESS) return true;
  if (is_zero(a->authorizer, 32)) return false;
  if (mem_eq(a->authorizer, user, 32)) return true;
  for (u64 i = 0; i < a->delegates_len; i++)
    if (mem_eq(a->delegates[i], user, 32)) return true;
  return false;
}

/* Ticks after a successful call when the run is live (as Psyche's program does). */
static u64 tick_if_live(account_t *a, u64 now, u64 seed) {
  return is_halted(a) ? 0 : tick(a, now, seed);
}

/* `raw`: the program input, for the deposit's CPI (deposit.c). */
static u64 join_run(const u8 *raw, account_t *a, const u8 *user, reader_t *r) {
  const u8 *p2p = take(r, 32);
  if (!r->ok || r->pos != r->len) return E_INVALID_INSTRUCTION;
  if (a->run_state == RS_FINISHED) return E_RUN_FINISHED;
  if (!may_join(a, user)) {
    LOG("join: the signer is not authorized to join this run");
    return E_NOT_AUTHORIZED_TO_JOIN;
  }
  u64 slot = a->registry_len;
  for (u64 i = 0; i < a->registry_len; i++)
    if (same_key(a->registry[i].signer, user)) slot = i;
  bool already_pending = slot < a->registry_len && is_pending(a, slot);
  if (slot == a->registry_len && a->registry_len == MAX_CLIENTS) {
    /* Full: reuse the first stale registration, one without points or a deposit (is_reusable). */
    for (u64 i = 0; i < MAX_CLIENTS && slot == MAX_CLIENTS; i++)
      if (is_reusable(a, i)) slot = i;
    if (slot == MAX_CLIENTS) return E_CLIENTS_FULL;
  }
  if (!already_pending && pending_count(a) + 1 > a->config.global_batch_size_end) {
    LOG("join: more pending clients than the batch has sequences");
    return E_MORE_CLIENTS_THAN_BATCHES;
  }
  bool pay = deposit_due(a, slot, user);
  u64 err;
  if (pay && (err = take_deposit(raw, a))) return err;
  registration_t *reg = &a->registry[slot];
  /* A new registration starts from no points and no deposit (a reused one never held any). */
  if (slot == a->registry_len || !same_key(reg->signer, user)) {
    a->earned[slot] = 0;
    a->deposits[slot] = 0;
    a->slashed[slot] = 0;
  }
  if (pay) {
    a->deposits[slot] = a->join_deposit.amount;
    a->join_deposit.held += a->join_deposit.amount;
  }
  mem_copy(reg->signer, user, 32);
  mem_copy(reg->p2p, p2p, 32);
  reg->active = a->next_active;
  if (slot == a->registry_len) a->registry_len++;
  if (is_halted(a)) return 0;
  u64 now, seed;
  if ((err = clock_now(&now, &seed))) return err;
  return tick(a, now, seed);
}

/* Reads a state-encoding Bloom header and body; returns the body (keys then bits). */
static const u8 *get_bloom(reader_t *r, u8 *keys, u32 *bits) {
  *keys = get8(r);
  *bits = get32(r);
  if (*keys > MAX_BLOOM_KEYS || *bits % 8 != 0 || *bits > 8 * MAX_BLOOM_BYTES) r->ok = false;
  return r->ok ? take(r, (u64)*keys * 8 + *bits / 8) : NULL;
}

/*
 * `tail`: a witness (not a warmup witness) may end with the metadata tail (step u32, loss,
 * tokens/s, bandwidth/s, efficiency as f64): checked for size and finite numbers, then ignored.
 * It is informational, for dashboards that read it back from the transaction.
 */
static u64 parse_witness(reader_t *r, witness_msg_t *w, bool tail) {
  w->position = get32(r);
  w->index = get32(r);
  w->witness = get_code(r, 2);
  w->participant = get_bloom(r, &w->participant_keys, &w->participant_bits);
  w->broadcast = get_bloom(r, &w->broadcast_keys, &w->broadcast_bits);
  w->merkle = take(r, 32);
  w->digest = take(r, DIGEST_BYTES);
  if (tail && r->ok && r->pos < r->len) {
    take(r, 4);
    for (u64 i = 0; i < (WITNESS_TAIL_BYTES - 4) / 8; i++) skip_f64(r);
  }
  if (!r->ok || r->pos != r->len) {
    LOG("witness: malformed instruction data");
    return E_INVALID_INSTRUCTION;
  }
  return 0;
}

static u64 free_coordinator(const input_t *in, account_t *a) {
  if (in->num_accounts < 3) return E_NOT_ENOUGH_ACCOUNTS;
  if (!is_halted(a)) return E_NOT_HALTED;
  const account_info_t *coord = &in->accounts[0], *spill = &in->accounts[2];
  if (!spill->is_writable || mem_eq(spill->key, coord->key, 32)) return E_INVALID_SPILL_ACCOUNT;
  *spill->lamports += *coord->lamports;
  *coord->lamports = 0;
  mem_zero(coord->data, coord->data_len);
  return 0;
}

static u64 set_delegates(account_t *a, reader_t *r) {
  u8 clear = get_code(r, 2);
  u8 count = get8(r);
  const u8 *keys = take(r, (u64)count * 32);
  if (!r->ok || r->pos != r->len) return E_INVALID_INSTRUCTION;
  if (clear) {
    mem_zero(a->delegates, sizeof(a->delegates));
    a->delegates_len = 0;
  }
  for (u64 k = 0; k < count; k++) {
    const u8 *key = keys + k * 32;
    bool present = false;
    for (u64 i = 0; i < a->delegates_len && !present; i++) present = mem_eq(a->delegates[i], key, 32);
    if (present) continue;
    if (a->delegates_len >= MAX_DELEGATES) return E_DELEGATES_FULL;
    mem_copy(a->delegates[a->delegates_len++], key, 32);
  }
  return 0;
}

static u64 dispatch(const input_t *in, const u8 *raw) {
  reader_t r = {in->data, in->data_len, 0, true};
  u8 tag = get8(&r);
  if (!r.ok) return E_INVALID_INSTRUCTION;
  if (tag == IX_INIT_COORDINATOR) return init_coordinator(in, &r);
  account_t *a;
  u64 err = coordinator_account(in, &a);
  if (err) return err;
  const u8 *user;
  u64 now, seed;
  switch (tag) {
  case IX_UPDATE:
    if ((err = signer(in, a->main_authority, E_NOT_MAIN_AUTHORITY, &user))) return err;
    err = update(a, &r);
    break;
  case IX_SET_PAUSED:
    if ((err = signer(in, a->main_authority, E_NOT_MAIN_AUTHORITY, &user))) return err;
    err = set_paused(a, &r);
    break;
  case IX_JOIN_RUN:
    if ((err = signer(in, NULL, 0, &user))) return err;
    err = join_run(raw, a, user, &r);
    break;
  case IX_SET_JOIN_DEPOSIT:
    if ((err = signer(in, a->main_authority, E_NOT_MAIN_AUTHORITY, &user))) return err;
    err = set_join_deposit(in, a, &r);
    break;
  case IX_WITHDRAW_DEPOSIT:
    if ((err = signer(in, NULL, 0, &user))) return err;
    err = withdraw_deposit(raw, a, user, &r);
    break;
  case IX_SWEEP_FORFEITED:
    if ((err = signer(in, a->main_authority, E_NOT_MAIN_AUTHORITY, &user))) return err;
    if (r.pos != r.len) return E_INVALID_INSTRUCTION;
    err = sweep_forfeited(raw, a);
    break;
  case IX_TICK:
    if (r.pos != r.len) return E_INVALID_INSTRUCTION;
    if ((err = clock_now(&now, &seed))) return err;
    err = tick(a, now, seed);
    break;
  case IX_WITNESS:
  case IX_WARMUP_WITNESS: {
    if ((err = signer(in, NULL, 0, &user))) return err;
    witness_msg_t w;
    if ((err = parse_witness(&r, &w, tag == IX_WITNESS))) return err;
    if ((err = clock_now(&now, &seed))) return err;
    err = tag == IX_WITNESS ? witness(a, user, &w, now) : warmup_witness(a, user, &w, now, seed);
    if (!err) err = tick_if_live(a, now, seed);
    break;
  }
  case IX_COOLDOWN_WITNESS: {
    if ((err = signer(in, NULL, 0, &user))) return err;
    cooldown_msg_t m;
    m.position = get32(&r);
    m.index = get32(&r);
    m.witness = get_code(&r, 2);
    m.digest = take(&r, DIGEST_BYTES);
    if (!r.ok || r.pos != r.len) return E_INVALID_INSTRUCTION;
    if ((err = clock_now(&now, &seed))) return err;
    err = cooldown_witness(a, user, &m);
    if (!err) err = tick_if_live(a, now, seed);
    break;
  }
  case IX_HEALTH_CHECK: {
    if ((err = signer(in, NULL, 0, &user))) return err;
    u8 count = get8(&r);
    const u8 *entries = take(&r, (u64)count * HEALTH_ENTRY_BYTES);
    if (!r.ok || r.pos != r.len) return E_INVALID_INSTRUCTION;
    if ((err = clock_now(&now, &seed))) return err;
    err = health_check(a, user, entries, count);
    if (!err) err = tick_if_live(a, now, seed);
    break;
  }
  case IX_CHECKPOINT: {
    if ((err = signer(in, NULL, 0, &user))) return err;
    u32 index = get32(&r);
    if (!r.ok) return E_INVALID_INSTRUCTION;
    if ((err = clock_now(&now, &seed))) return err;
    err = checkpoint(a, user, index, &r, now);
    if (!err) err = tick_if_live(a, now, seed);
    break;
  }
  case IX_VERIFICATION_REPORT: {
    if ((err = signer(in, NULL, 0, &user))) return err;
    report_msg_t m;
    m.height = get32(&r);
    m.trainer = get16(&r);
    m.fail = get_code(&r, 2);
    m.evidence = get_code(&r, NUM_EVIDENCE_KINDS);
    m.detail = get32(&r);
    if (!r.ok || r.pos != r.len) return E_INVALID_INSTRUCTION;
    if ((err = clock_now(&now, &seed))) return err;
    err = verification_report(a, user, &m);
    if (!err) err = tick_if_live(a, now, seed);
    break;
  }
  case IX_FREE_COORDINATOR:
    if ((err = signer(in, a->main_authority, E_NOT_MAIN_AUTHORITY, &user))) return err;
    if (r.pos != r.len) return E_INVALID_INSTRUCTION;
    return free_coordinator(in, a);
  case IX_GRANT_AUTHORIZER: {
    if ((err = signer(in, a->join_authority, E_NOT_JOIN_AUTHORITY, &user))) return err;
    const u8 *key = take(&r, 32);
    if (!r.ok || r.pos != r.len) return E_INVALID_INSTRUCTION;
    if (!mem_eq(a->authorizer, key, 32)) {
      mem_copy(a->authorizer, key, 32);
      mem_zero(a->delegates, sizeof(a->delegates));
      a->delegates_len = 0;
    }
    break;
  }
  case IX_SET_FUTURE_EPOCH_RATES:
    if ((err = signer(in, a->main_authority, E_NOT_MAIN_AUTHORITY, &user))) return err;
    err = set_future_epoch_rates(a, &r);
    break;
  case IX_SET_DELEGATES:
    if (is_zero(a->authorizer, 32)) return E_NOT_AUTHORIZER;
    if ((err = signer(in, a->authorizer, E_NOT_AUTHORIZER, &user))) return err;
    err = set_delegates(a, &r);
    break;
  default:
    LOG("unknown instruction");
    return E_INVALID_INSTRUCTION;
  }
  if (err) return err;
  a->nonce++;
  return 0;
}

u64 entrypoint(const u8 *input) {
  input_t in;
  parse_input(input, &in);
  return dispatch(&in, input);
}
