/*
 * The treasurer as a Solana program (SBPF v0), in freestanding C: a run's main authority
 * creates the run's treasury, an SPL Token vault owned by the treasury's PDA that anyone may top
 * up with a plain SPL transfer; each client that trained in the run claims one token unit per
 * point the coordinator account says it earned, less what it already claimed. Psyche's
 * `solana-treasurer` (participant_create, participant_claim), without its ownership of the run
 * (docs/solana-treasurer.md says why and what else differs).
 *
 * Accounts (all program-derived; bumps stored):
 *   treasury     ["treasury", coordinator account]      this program, TREASURY_BYTES
 *   vault        ["vault", treasury]                     Token account of the treasury's mint,
 *                                                        owned by the treasury PDA
 *   participant  ["participant", treasury, user]         this program, PARTICIPANT_BYTES
 *
 * The coordinator account is read, never written, through the generated layout.h (account_t),
 * so the offsets of its magic, version, main authority, registry and earned points follow the
 * layout when it changes; an account of another layout version is refused.
 *
 * Instruction data: a u8 tag, then the fields. Errors: 7100 + n (the enum below;
 * coordinator/solana/treasurer/errors.ts names them). Every refusal aborts the transaction, so
 * every account stays byte-identical.
 */
/* sol.h's parse_input serves the coordinator; this program parses into SolAccountInfo. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-function"
#include "../program/sol.h"
#pragma clang diagnostic pop
#include "../program/layout.h"
#include "../program/sol_cpi.h"
#include "../program/spl_token.h"
#define PROGRAM_NAME "treasurer"
#include "../program/account_checks.h"

enum {
  IX_TREASURY_CREATE = 0,
  IX_PARTICIPANT_CREATE = 1,
  IX_PARTICIPANT_CLAIM = 2,
};

/* layout.h holds the coordinator's E_* codes: this program's are ERR_*. */
#define ERROR_BASE 7100
enum {
  ERR_INVALID_INSTRUCTION = ERROR_BASE + 0,
  ERR_NOT_ENOUGH_ACCOUNTS = ERROR_BASE + 1,
  ERR_MISSING_SIGNATURE = ERROR_BASE + 2,
  ERR_NOT_WRITABLE = ERROR_BASE + 3,
  ERR_INVALID_TREASURY_ACCOUNT = ERROR_BASE + 4,
  ERR_INVALID_PARTICIPANT_ACCOUNT = ERROR_BASE + 5,
  ERR_WRONG_ADDRESS = ERROR_BASE + 6,
  ERR_ALREADY_INITIALIZED = ERROR_BASE + 7,
  ERR_INVALID_MINT = ERROR_BASE + 8,
  ERR_INVALID_VAULT = ERROR_BASE + 9,
  ERR_INVALID_TOKEN_ACCOUNT = ERROR_BASE + 10,
  ERR_INVALID_PROGRAM = ERROR_BASE + 11,
  ERR_INVALID_COORDINATOR_ACCOUNT = ERROR_BASE + 12,
  ERR_NOT_RUN_AUTHORITY = ERROR_BASE + 13,
  ERR_NOT_PARTICIPANT = ERROR_BASE + 14,
  ERR_NOT_REGISTERED = ERROR_BASE + 15,
  ERR_NOTHING_TO_CLAIM = ERROR_BASE + 16,
  ERR_INSUFFICIENT_FUNDS = ERROR_BASE + 17,
  ERR_OVERFLOW = ERROR_BASE + 18,
  ERR_UNDERFLOW = ERROR_BASE + 19,
  ERR_UNSUPPORTED_RENT = ERROR_BASE + 20,
  ERR_CPI_FAILED = ERROR_BASE + 21,
};

/* The codes of the shared checks' refusals (account_checks.h). */
static const program_errors_t ERRORS = {
    .not_enough_accounts = ERR_NOT_ENOUGH_ACCOUNTS, .missing_signature = ERR_MISSING_SIGNATURE,
    .not_writable = ERR_NOT_WRITABLE, .wrong_address = ERR_WRONG_ADDRESS,
    .already_initialized = ERR_ALREADY_INITIALIZED, .unsupported_rent = ERR_UNSUPPORTED_RENT,
    .cpi_failed = ERR_CPI_FAILED, .overflow = ERR_OVERFLOW, .underflow = ERR_UNDERFLOW};

#define TREASURY_VERSION 1
#define PARTICIPANT_VERSION 1
static const u8 TREASURY_MAGIC[8] = {'P', 'S', 'Y', 'T', 'R', 'E', 'A', '1'};
static const u8 PARTICIPANT_MAGIC[8] = {'P', 'S', 'Y', 'P', 'A', 'R', 'T', '1'};

/* The treasury account (192 bytes). */
typedef struct {
  u8 magic[8];
  u8 version;
  u8 bump;
  u8 vault_bump;
  u8 padding[5];
  u8 coordinator_program[32]; /* the owner the coordinator account must have */
  u8 coordinator[32];         /* the run's coordinator account */
  u8 mint[32];
  u8 vault[32];
  u8 authority[32];           /* the run's main authority when the treasury was created */
  u64 total_claimed;          /* tokens paid out, in all */
  u64 participants;           /* participant accounts created */
} treasury_t;
#define TREASURY_BYTES 192
_Static_assert(sizeof(treasury_t) == TREASURY_BYTES, "treasury layout");
_Static_assert(__builtin_offsetof(treasury_t, total_claimed) == 176, "treasury layout");

/* A participant account (88 bytes). */
typedef struct {
  u8 magic[8];
  u8 version;
  u8 bump;
  u8 padding[6];
  u8 treasury[32];
  u8 user[32];
  u64 claimed; /* points paid, one token unit each */
} participant_t;
#define PARTICIPANT_BYTES 88
_Static_assert(sizeof(participant_t) == PARTICIPANT_BYTES, "participant layout");

/* The most accounts an instruction uses (treasury_create, participant_claim: 7). */
#define MAX_ACCOUNTS 7
_Static_assert(MAX_ACCOUNTS <= PROGRAM_MAX_ACCOUNTS, "ctx_t holds every account");

/* ---- accounts ---- */

/* Account `i` is an initialized treasury of this program. */
static u64 treasury_at(const ctx_t *c, u64 i, treasury_t **out) {
  const account_kind_t kind = {
      TREASURY_BYTES, TREASURY_MAGIC, TREASURY_VERSION, ERR_INVALID_TREASURY_ACCOUNT,
      KIND_LOG("treasurer: account is not a treasury of this program")};
  return program_account_at(c, i, &kind, (void **)out);
}

/* Account `i` is this treasury's participant account of the signer at `user`. */
static u64 participant_at(const ctx_t *c, u64 i, u64 treasury_i, u64 user_i, participant_t **out) {
  const account_kind_t kind = {
      PARTICIPANT_BYTES, PARTICIPANT_MAGIC, PARTICIPANT_VERSION, ERR_INVALID_PARTICIPANT_ACCOUNT,
      KIND_LOG("treasurer: account is not a participant of this program")};
  participant_t *p;
  u64 err = program_account_at(c, i, &kind, (void **)&p);
  if (err) return err;
  if (!mem_eq(p->treasury, c->accounts[treasury_i].key->bytes, 32)) {
    return ERR_INVALID_PARTICIPANT_ACCOUNT;
  }
  if (!mem_eq(p->user, c->accounts[user_i].key->bytes, 32)) {
    LOG("treasurer: the signer is not this participant account's user");
    return ERR_NOT_PARTICIPANT;
  }
  *out = p;
  return 0;
}

/*
 * Account `i` is an initialized coordinator account of `program` in the layout this program was
 * built with (layout.h): owned by `program`, of account_t's size, with its magic and version.
 */
static u64 coordinator_at(const ctx_t *c, u64 i, const u8 *program, const account_t **out) {
  const SolAccountInfo *info = &c->accounts[i];
  if (!mem_eq(info->owner->bytes, program, 32) || info->data_len != sizeof(account_t)) {
    LOG("treasurer: not a coordinator account of the coordinator program, or another size");
    return ERR_INVALID_COORDINATOR_ACCOUNT;
  }
  const account_t *a = (const account_t *)info->data;
  if (!mem_eq(a->magic, ACCOUNT_MAGIC, 8) || a->version != ACCOUNT_VERSION ||
      a->registry_len > MAX_CLIENTS) {
    LOG("treasurer: the coordinator account is uninitialized or of another layout version");
    return ERR_INVALID_COORDINATOR_ACCOUNT;
  }
  *out = a;
  return 0;
}

/* ---- instructions ---- */

/* treasury_create {coordinator_program [32]}: 0 treasury (w), 1 authority (s, w: pays),
   2 coordinator account, 3 mint, 4 vault (w), 5 system program, 6 token program. */
static u64 treasury_create(ctx_t *c) {
  if (c->in.data_len != 33) return ERR_INVALID_INSTRUCTION;
  const u8 *coordinator_program = c->in.data + 1;
  u64 err = need(c, 7);
  if (!err) err = signer_at(c, 1);
  if (!err) err = writable_at(c, 0);
  if (!err) err = writable_at(c, 1);
  if (!err) err = writable_at(c, 4);
  if (err) return err;
  if (!is_system_program(c->accounts[5].key) || !is_token_program(&c->accounts[6])) {
    return ERR_INVALID_PROGRAM;
  }
  const account_t *run;
  err = coordinator_at(c, 2, coordinator_program, &run);
  if (err) return err;
  SolPubkey *authority = c->accounts[1].key;
  if (!mem_eq(run->main_authority, authority->bytes, 32)) {
    LOG("treasurer: only the run's main authority creates its treasury");
    return ERR_NOT_RUN_AUTHORITY;
  }
  if (!is_mint(&c->accounts[3])) return ERR_INVALID_MINT;

  const u8 *coordinator = c->accounts[2].key->bytes;
  u8 treasury_bump[1], vault_bump[1];
  SolSignerSeed treasury_s[3] = {
      {(const u8 *)"treasury", 8}, {coordinator, 32}, {treasury_bump, 1}};
  err = fresh_pda(c, 0, treasury_s, 2, treasury_bump);
  if (err) return err;
  const u8 *treasury_key = c->accounts[0].key->bytes;
  SolSignerSeed vault_s[3] = {{(const u8 *)"vault", 5}, {treasury_key, 32}, {vault_bump, 1}};
  err = fresh_pda(c, 4, vault_s, 2, vault_bump);
  if (err) return err;

  SolSignerSeeds treasury_signer = {treasury_s, 3};
  SolSignerSeeds vault_signer = {vault_s, 3};
  const new_account_t treasury_account = {1, 0, TREASURY_BYTES, false};
  const new_account_t vault_account = {1, 4, TOKEN_ACCOUNT_BYTES, true};
  err = create_pda(c, &treasury_account, &treasury_signer);
  if (!err) err = create_pda(c, &vault_account, &vault_signer);
  if (err) return err;
  if (token_initialize_account(c->accounts[4].key, c->accounts[3].key, c->accounts[0].key,
                               c->accounts, c->n) != 0) {
    return ERR_CPI_FAILED;
  }

  treasury_t *t = (treasury_t *)c->accounts[0].data;
  mem_zero(t, TREASURY_BYTES);
  mem_copy(t->magic, TREASURY_MAGIC, 8);
  t->version = TREASURY_VERSION;
  t->bump = treasury_bump[0];
  t->vault_bump = vault_bump[0];
  mem_copy(t->coordinator_program, coordinator_program, 32);
  mem_copy(t->coordinator, coordinator, 32);
  mem_copy(t->mint, c->accounts[3].key->bytes, 32);
  mem_copy(t->vault, c->accounts[4].key->bytes, 32);
  mem_copy(t->authority, authority->bytes, 32);
  return 0;
}

/* participant_create {}: 0 treasury (w), 1 participant (w), 2 user (s, w: pays),
   3 system program. */
static u64 participant_create(ctx_t *c) {
  if (c->in.data_len != 1) return ERR_INVALID_INSTRUCTION;
  treasury_t *t;
  u64 err = need(c, 4);
  if (!err) err = treasury_at(c, 0, &t);
  if (!err) err = writable_at(c, 0);
  if (!err) err = writable_at(c, 1);
  if (!err) err = writable_at(c, 2);
  if (!err) err = signer_at(c, 2);
  if (err) return err;
  if (!is_system_program(c->accounts[3].key)) return ERR_INVALID_PROGRAM;
  u64 participants;
  err = add_checked(c, t->participants, 1, &participants);
  if (err) return err;
  const u8 *treasury_key = c->accounts[0].key->bytes;
  const u8 *user = c->accounts[2].key->bytes;
  u8 bump[1];
  SolSignerSeed s[4] = {
      {(const u8 *)"participant", 11}, {treasury_key, 32}, {user, 32}, {bump, 1}};
  err = fresh_pda(c, 1, s, 3, bump);
  if (err) return err;
  SolSignerSeeds signer = {s, 4};
  const new_account_t participant_account = {2, 1, PARTICIPANT_BYTES, false};
  err = create_pda(c, &participant_account, &signer);
  if (err) return err;
  participant_t *p = (participant_t *)c->accounts[1].data;
  mem_zero(p, PARTICIPANT_BYTES);
  mem_copy(p->magic, PARTICIPANT_MAGIC, 8);
  p->version = PARTICIPANT_VERSION;
  p->bump = bump[0];
  mem_copy(p->treasury, treasury_key, 32);
  mem_copy(p->user, user, 32);
  t->participants = participants;
  return 0;
}

/* The points of `user`'s registration in the run; ERR_NOT_REGISTERED when it has none. A wallet
   has at most one registration (join_run reuses it), and a registration holding points is
   never given to another wallet, so these points only grow. The registration's slashed points
   are informational and take nothing from them (docs/solana-treasurer.md). */
static u64 earned_points(const account_t *a, const u8 *user, u64 *out) {
  for (u64 i = 0; i < a->registry_len; i++) {
    if (mem_eq(a->registry[i].signer, user, 32)) {
      *out = a->earned[i];
      return 0;
    }
  }
  LOG("treasurer: the signer has no registration in the run");
  return ERR_NOT_REGISTERED;
}

/* participant_claim {}: 0 treasury (w), 1 participant (w), 2 user (s), 3 coordinator account,
   4 vault (w), 5 the user's token account of the mint (w), 6 token program. Pays every point the
   run says the user earned and was not yet paid for, one token unit each, or nothing. */
static u64 participant_claim(ctx_t *c) {
  if (c->in.data_len != 1) return ERR_INVALID_INSTRUCTION;
  treasury_t *t;
  participant_t *p;
  u64 err = need(c, 7);
  if (!err) err = treasury_at(c, 0, &t);
  if (!err) err = signer_at(c, 2);
  if (!err) err = participant_at(c, 1, 0, 2, &p);
  if (!err) err = writable_at(c, 0);
  if (!err) err = writable_at(c, 1);
  if (!err) err = writable_at(c, 4);
  if (!err) err = writable_at(c, 5);
  if (err) return err;
  if (!is_token_program(&c->accounts[6])) return ERR_INVALID_PROGRAM;
  if (!mem_eq(c->accounts[3].key->bytes, t->coordinator, 32)) {
    LOG("treasurer: not the treasury's coordinator account");
    return ERR_INVALID_COORDINATOR_ACCOUNT;
  }
  const account_t *run;
  err = coordinator_at(c, 3, t->coordinator_program, &run);
  if (err) return err;
  const SolAccountInfo *vault = &c->accounts[4];
  if (!mem_eq(vault->key->bytes, t->vault, 32) ||
      !is_token_account(vault, t->mint, c->accounts[0].key->bytes)) {
    return ERR_INVALID_VAULT;
  }
  const u8 *user = c->accounts[2].key->bytes;
  if (!is_token_account(&c->accounts[5], t->mint, user)) {
    LOG("treasurer: the destination is not the user's token account of the treasury's mint");
    return ERR_INVALID_TOKEN_ACCOUNT;
  }
  u64 earned, pay, total;
  err = earned_points(run, user, &earned);
  if (!err) err = sub_checked(c, earned, p->claimed, &pay);
  if (err) return err;
  if (pay == 0) return ERR_NOTHING_TO_CLAIM;
  err = add_checked(c, t->total_claimed, pay, &total);
  if (err) return err;
  /* All or nothing: a partial payment would leave a debt the accounts do not record. */
  if (token_amount(vault) < pay) {
    LOG("treasurer: the vault holds less than the points owed");
    return ERR_INSUFFICIENT_FUNDS;
  }
  u8 bump[1] = {t->bump};
  SolSignerSeed seeds[3] = {{(const u8 *)"treasury", 8}, {t->coordinator, 32}, {bump, 1}};
  SolSignerSeeds signer = {seeds, 3};
  token_transfer_t transfer = {vault->key, c->accounts[5].key, c->accounts[0].key, pay};
  if (token_transfer(&transfer, c->accounts, c->n, &signer) != 0) return ERR_CPI_FAILED;
  p->claimed = earned;
  t->total_claimed = total;
  return 0;
}

u64 entrypoint(const u8 *input) {
  ctx_t c;
  parse_ctx(input, MAX_ACCOUNTS, &ERRORS, &c);
  if (c.in.data_len < 1) return ERR_INVALID_INSTRUCTION;
  switch (c.in.data[0]) {
    case IX_TREASURY_CREATE: return treasury_create(&c);
    case IX_PARTICIPANT_CREATE: return participant_create(&c);
    case IX_PARTICIPANT_CLAIM: return participant_claim(&c);
    default: return ERR_INVALID_INSTRUCTION;
  }
}
