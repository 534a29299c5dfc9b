/*
 * The mining pool as a Solana program (SBPF v0), in freestanding C: lenders deposit SPL
 * tokens (the collateral) into a pool that backs a run; the pool's authority freezes
 * deposits, and once the pool has earned reward tokens the authority funds the rewards vault
 * and declares how much of it lenders may claim; each lender claims
 * floor(deposited * total_claimable / total_deposited), less what it already claimed.
 * Psyche's `solana-mining-pool`, simplified (docs/solana-pool.md says where).
 *
 * Accounts (all program-derived; bumps stored):
 *   pool             ["pool", authority, u64le index]      this program, POOL_BYTES
 *   collateral vault ["collateral", pool]                  Token account of the collateral
 *                                                          mint, owned by the pool PDA
 *   rewards vault    ["rewards", pool]                     Token account of the rewards mint,
 *                                                          owned by the pool PDA
 *   lender           ["lender", pool, user]                this program, LENDER_BYTES
 *
 * Instruction data: a u8 tag, then the fields, little-endian and packed. Errors: 7000 + n
 * (the enum below; coordinator/solana/pool/errors.ts names them). Every refusal aborts the
 * transaction, so every account stays byte-identical.
 */
/* sol.h's parse_input serves the coordinator; this program parses into SolAccountInfo. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-function"
#include "../program/sol.h"
#pragma clang diagnostic pop
#include "../program/sol_cpi.h"
#include "../program/spl_token.h"
#define PROGRAM_NAME "pool"
#include "../program/account_checks.h"

enum {
  IX_POOL_CREATE = 0,
  IX_POOL_UPDATE = 1,
  IX_POOL_EXTRACT = 2,
  IX_POOL_CLAIMABLE = 3,
  IX_LENDER_CREATE = 4,
  IX_LENDER_DEPOSIT = 5,
  IX_LENDER_CLAIM = 6,
};

#define ERROR_BASE 7000
enum {
  E_INVALID_INSTRUCTION = ERROR_BASE + 0,
  E_NOT_ENOUGH_ACCOUNTS = ERROR_BASE + 1,
  E_MISSING_SIGNATURE = ERROR_BASE + 2,
  E_NOT_POOL_AUTHORITY = ERROR_BASE + 3,
  E_INVALID_POOL_ACCOUNT = ERROR_BASE + 4,
  E_INVALID_LENDER_ACCOUNT = ERROR_BASE + 5,
  E_WRONG_ADDRESS = ERROR_BASE + 6,
  E_ALREADY_INITIALIZED = ERROR_BASE + 7,
  E_INVALID_MINT = ERROR_BASE + 8,
  E_INVALID_VAULT = ERROR_BASE + 9,
  E_INVALID_TOKEN_ACCOUNT = ERROR_BASE + 10,
  E_INVALID_PROGRAM = ERROR_BASE + 11,
  E_POOL_FROZEN = ERROR_BASE + 12,
  E_POOL_NOT_FROZEN = ERROR_BASE + 13,
  E_CAP_EXCEEDED = ERROR_BASE + 14,
  E_INVALID_AMOUNT = ERROR_BASE + 15,
  E_INSUFFICIENT_FUNDS = ERROR_BASE + 16,
  E_OVERFLOW = ERROR_BASE + 17,
  E_UNDERFLOW = ERROR_BASE + 18,
  E_CLAIMING_STARTED = ERROR_BASE + 19,
  E_CLAIMABLE_DECREASED = ERROR_BASE + 20,
  E_REWARDS_NOT_FUNDED = ERROR_BASE + 21,
  E_NOTHING_TO_CLAIM = ERROR_BASE + 22,
  E_NOT_LENDER = ERROR_BASE + 23,
  E_UNSUPPORTED_RENT = ERROR_BASE + 24,
  E_NOTHING_DEPOSITED = ERROR_BASE + 25,
  E_NOT_WRITABLE = ERROR_BASE + 26,
  E_CPI_FAILED = ERROR_BASE + 27,
};

/* The codes of the shared checks' refusals (account_checks.h). */
static const program_errors_t ERRORS = {
    .not_enough_accounts = E_NOT_ENOUGH_ACCOUNTS, .missing_signature = E_MISSING_SIGNATURE,
    .not_writable = E_NOT_WRITABLE, .wrong_address = E_WRONG_ADDRESS,
    .already_initialized = E_ALREADY_INITIALIZED, .unsupported_rent = E_UNSUPPORTED_RENT,
    .cpi_failed = E_CPI_FAILED, .overflow = E_OVERFLOW, .underflow = E_UNDERFLOW};

#define POOL_VERSION 1
#define LENDER_VERSION 1
static const u8 POOL_MAGIC[8] = {'P', 'S', 'Y', 'P', 'O', 'O', 'L', '1'};
static const u8 LENDER_MAGIC[8] = {'P', 'S', 'Y', 'L', 'E', 'N', 'D', '1'};

/* The pool account (232 bytes). */
typedef struct {
  u8 magic[8];
  u8 version;
  u8 bump;
  u8 frozen;              /* 1: deposits refused */
  u8 collateral_vault_bump;
  u8 rewards_vault_bump;
  u8 padding[3];
  u64 index;
  u8 authority[32];
  u8 collateral_mint[32];
  u8 collateral_vault[32];
  u8 rewards_mint[32];
  u8 rewards_vault[32];
  u64 max_deposit;        /* cap on total_deposited */
  u64 total_deposited;    /* sum of every lender's deposits */
  u64 total_extracted;    /* collateral the authority took out (lender accounting ignores it) */
  u64 total_claimable;    /* rewards lenders may claim in all (only grows) */
  u64 total_claimed;      /* rewards paid out */
  u64 lenders;            /* lender accounts created */
} pool_t;
#define POOL_BYTES 232
_Static_assert(sizeof(pool_t) == POOL_BYTES, "pool layout");
_Static_assert(__builtin_offsetof(pool_t, max_deposit) == 184, "pool layout");

/* A lender account (96 bytes). */
typedef struct {
  u8 magic[8];
  u8 version;
  u8 bump;
  u8 padding[6];
  u8 pool[32];
  u8 user[32];
  u64 deposited;          /* collateral this lender put in */
  u64 claimed;            /* rewards this lender was paid */
} lender_t;
#define LENDER_BYTES 96
_Static_assert(sizeof(lender_t) == LENDER_BYTES, "lender layout");

/* The most accounts an instruction uses (pool_create: 8); more are ignored. */
#define MAX_ACCOUNTS 8
_Static_assert(MAX_ACCOUNTS <= PROGRAM_MAX_ACCOUNTS, "ctx_t holds every account");

/*
 * floor(a * b / c) in 128-bit arithmetic (sBPF has no 128-bit integers): the product as two
 * 64-bit halves, then restoring long division. E_OVERFLOW when the quotient needs more than
 * 64 bits; c must not be 0.
 */
static u64 mul_div_floor(u64 a, u64 b, u64 c, u64 *out) {
  u64 a_lo = a & 0xffffffffull, a_hi = a >> 32;
  u64 b_lo = b & 0xffffffffull, b_hi = b >> 32;
  u64 ll = a_lo * b_lo, lh = a_lo * b_hi, hl = a_hi * b_lo, hh = a_hi * b_hi;
  u64 mid = (ll >> 32) + (lh & 0xffffffffull) + (hl & 0xffffffffull);
  u64 lo = (ll & 0xffffffffull) | (mid << 32);
  u64 hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
  if (hi >= c) return E_OVERFLOW; /* the quotient would not fit 64 bits */
  u64 rem = hi, q = 0;
  for (int i = 63; i >= 0; i--) {
    u64 carry = rem >> 63;
    rem = (rem << 1) | ((lo >> i) & 1);
    q <<= 1;
    if (carry || rem >= c) {
      rem -= c;
      q |= 1;
    }
  }
  *out = q;
  return 0;
}

/* ---- accounts ---- */

/* Account `i` is an initialized pool of this program. */
static u64 pool_at(const ctx_t *c, u64 i, pool_t **out) {
  const account_kind_t kind = {
      POOL_BYTES, POOL_MAGIC, POOL_VERSION, E_INVALID_POOL_ACCOUNT,
      KIND_LOG("pool: account is not a pool of this program")};
  return program_account_at(c, i, &kind, (void **)out);
}

/* Account `i` is this pool's lender account of the signer at `user`. */
static u64 lender_at(const ctx_t *c, u64 i, u64 pool_i, u64 user_i, lender_t **out) {
  const account_kind_t kind = {
      LENDER_BYTES, LENDER_MAGIC, LENDER_VERSION, E_INVALID_LENDER_ACCOUNT,
      KIND_LOG("pool: account is not a lender of this program")};
  lender_t *l;
  u64 err = program_account_at(c, i, &kind, (void **)&l);
  if (err) return err;
  if (!mem_eq(l->pool, c->accounts[pool_i].key->bytes, 32)) return E_INVALID_LENDER_ACCOUNT;
  if (!mem_eq(l->user, c->accounts[user_i].key->bytes, 32)) {
    LOG("pool: the signer is not this lender account's user");
    return E_NOT_LENDER;
  }
  *out = l;
  return 0;
}

/* The pool's PDA seeds with its bump: ["pool", authority, index]. */
typedef struct {
  u8 index[8];
  u8 bump[1];
  SolSignerSeed seeds[4];
} pool_seeds_t;

static void pool_seeds(const pool_t *p, pool_seeds_t *s) {
  wr64(s->index, p->index);
  s->bump[0] = p->bump;
  s->seeds[0] = (SolSignerSeed){(const u8 *)"pool", 4};
  s->seeds[1] = (SolSignerSeed){p->authority, 32};
  s->seeds[2] = (SolSignerSeed){s->index, 8};
  s->seeds[3] = (SolSignerSeed){s->bump, 1};
}

/* ---- instructions ---- */

/* pool_create {index u64, max_deposit u64}: 0 pool (w), 1 authority (s, w: pays),
   2 collateral mint, 3 collateral vault (w), 4 rewards mint, 5 rewards vault (w),
   6 system program, 7 token program. */
static u64 pool_create(ctx_t *c) {
  if (c->in.data_len != 17) return E_INVALID_INSTRUCTION;
  u64 index = rd64(c->in.data + 1);
  u64 max_deposit = rd64(c->in.data + 9);
  u64 err = need(c, 8);
  if (!err) err = signer_at(c, 1);
  if (!err) err = writable_at(c, 0);
  if (!err) err = writable_at(c, 1);
  if (!err) err = writable_at(c, 3);
  if (!err) err = writable_at(c, 5);
  if (err) return err;
  if (!is_system_program(c->accounts[6].key) || !is_token_program(&c->accounts[7])) {
    return E_INVALID_PROGRAM;
  }
  if (!is_mint(&c->accounts[2]) || !is_mint(&c->accounts[4])) return E_INVALID_MINT;

  SolPubkey *authority = c->accounts[1].key;
  u8 index_le[8], pool_bump[1], collateral_bump[1], rewards_bump[1];
  wr64(index_le, index);
  SolSignerSeed pool_s[4] = {
      {(const u8 *)"pool", 4}, {authority->bytes, 32}, {index_le, 8}, {pool_bump, 1}};
  err = fresh_pda(c, 0, pool_s, 3, pool_bump);
  if (err) return err;
  const u8 *pool_key = c->accounts[0].key->bytes;
  SolSignerSeed collateral_s[3] = {
      {(const u8 *)"collateral", 10}, {pool_key, 32}, {collateral_bump, 1}};
  SolSignerSeed rewards_s[3] = {{(const u8 *)"rewards", 7}, {pool_key, 32}, {rewards_bump, 1}};
  err = fresh_pda(c, 3, collateral_s, 2, collateral_bump);
  if (!err) err = fresh_pda(c, 5, rewards_s, 2, rewards_bump);
  if (err) return err;

  SolSignerSeeds pool_signer = {pool_s, 4};
  SolSignerSeeds collateral_signer = {collateral_s, 3};
  SolSignerSeeds rewards_signer = {rewards_s, 3};
  const new_account_t pool_account = {1, 0, POOL_BYTES, false};
  const new_account_t collateral_vault = {1, 3, TOKEN_ACCOUNT_BYTES, true};
  const new_account_t rewards_vault = {1, 5, TOKEN_ACCOUNT_BYTES, true};
  err = create_pda(c, &pool_account, &pool_signer);
  if (!err) err = create_pda(c, &collateral_vault, &collateral_signer);
  if (!err) err = create_pda(c, &rewards_vault, &rewards_signer);
  if (err) return err;
  if (token_initialize_account(c->accounts[3].key, c->accounts[2].key, c->accounts[0].key,
                               c->accounts, c->n) != 0 ||
      token_initialize_account(c->accounts[5].key, c->accounts[4].key, c->accounts[0].key,
                               c->accounts, c->n) != 0) {
    return E_CPI_FAILED;
  }

  pool_t *p = (pool_t *)c->accounts[0].data;
  mem_zero(p, POOL_BYTES);
  mem_copy(p->magic, POOL_MAGIC, 8);
  p->version = POOL_VERSION;
  p->bump = pool_bump[0];
  p->collateral_vault_bump = collateral_bump[0];
  p->rewards_vault_bump = rewards_bump[0];
  p->index = index;
  mem_copy(p->authority, authority->bytes, 32);
  mem_copy(p->collateral_mint, c->accounts[2].key->bytes, 32);
  mem_copy(p->collateral_vault, c->accounts[3].key->bytes, 32);
  mem_copy(p->rewards_mint, c->accounts[4].key->bytes, 32);
  mem_copy(p->rewards_vault, c->accounts[5].key->bytes, 32);
  p->max_deposit = max_deposit;
  return 0;
}

/* The pool at 0 (writable) and its authority at 1 (signing). */
static u64 authority_pool(const ctx_t *c, pool_t **p) {
  u64 err = need(c, 2);
  if (!err) err = pool_at(c, 0, p);
  if (!err) err = writable_at(c, 0);
  if (!err) err = signer_at(c, 1);
  if (err) return err;
  if (!mem_eq((*p)->authority, c->accounts[1].key->bytes, 32)) {
    LOG("pool: the signer is not the pool's authority");
    return E_NOT_POOL_AUTHORITY;
  }
  return 0;
}

#define UPDATE_MAX_DEPOSIT 1u
#define UPDATE_FROZEN 2u

/* pool_update {flags u8, max_deposit u64, frozen u8}: 0 pool (w), 1 authority (s). */
static u64 pool_update(ctx_t *c) {
  if (c->in.data_len != 11) return E_INVALID_INSTRUCTION;
  u8 flags = c->in.data[1];
  u64 max_deposit = rd64(c->in.data + 2);
  u8 frozen = c->in.data[10];
  if ((flags & ~(UPDATE_MAX_DEPOSIT | UPDATE_FROZEN)) != 0 || frozen > 1) {
    return E_INVALID_INSTRUCTION;
  }
  pool_t *p;
  u64 err = authority_pool(c, &p);
  if (err) return err;
  /* Once claiming has begun, total_deposited is the divisor of every claim: reopening
     deposits would let later lenders dilute claims already paid. */
  if ((flags & UPDATE_FROZEN) && frozen == 0 && p->total_claimable != 0) {
    return E_CLAIMING_STARTED;
  }
  if (flags & UPDATE_MAX_DEPOSIT) p->max_deposit = max_deposit;
  if (flags & UPDATE_FROZEN) p->frozen = frozen;
  return 0;
}

/* pool_extract {amount u64}: 0 pool (w), 1 authority (s), 2 collateral vault (w),
   3 destination token account (w), 4 token program. */
static u64 pool_extract(ctx_t *c) {
  if (c->in.data_len != 9) return E_INVALID_INSTRUCTION;
  u64 amount = rd64(c->in.data + 1);
  pool_t *p;
  u64 err = need(c, 5);
  if (!err) err = authority_pool(c, &p);
  if (!err) err = writable_at(c, 2);
  if (!err) err = writable_at(c, 3);
  if (err) return err;
  if (!is_token_program(&c->accounts[4])) return E_INVALID_PROGRAM;
  const SolAccountInfo *vault = &c->accounts[2];
  if (!mem_eq(vault->key->bytes, p->collateral_vault, 32)) return E_INVALID_VAULT;
  if (!is_token_account(&c->accounts[3], p->collateral_mint, NULL) ||
      key_eq(c->accounts[3].key, vault->key)) {
    return E_INVALID_TOKEN_ACCOUNT;
  }
  if (amount == 0) return E_INVALID_AMOUNT;
  if (token_amount(vault) < amount) return E_INSUFFICIENT_FUNDS;
  u64 total;
  err = add_checked(c, p->total_extracted, amount, &total);
  if (err) return err;
  pool_seeds_t s;
  pool_seeds(p, &s);
  SolSignerSeeds signer = {s.seeds, 4};
  token_transfer_t t = {vault->key, c->accounts[3].key, c->accounts[0].key, amount};
  if (token_transfer(&t, c->accounts, c->n, &signer) != 0) return E_CPI_FAILED;
  p->total_extracted = total;
  return 0;
}

/* pool_claimable {total_claimable u64}: 0 pool (w), 1 authority (s), 2 rewards vault. */
static u64 pool_claimable(ctx_t *c) {
  if (c->in.data_len != 9) return E_INVALID_INSTRUCTION;
  u64 total = rd64(c->in.data + 1);
  pool_t *p;
  u64 err = need(c, 3);
  if (!err) err = authority_pool(c, &p);
  if (err) return err;
  const SolAccountInfo *vault = &c->accounts[2];
  if (!mem_eq(vault->key->bytes, p->rewards_vault, 32) ||
      !is_token_account(vault, p->rewards_mint, c->accounts[0].key->bytes)) {
    return E_INVALID_VAULT;
  }
  if (!p->frozen) return E_POOL_NOT_FROZEN;
  if (p->total_deposited == 0) return E_NOTHING_DEPOSITED;
  if (total < p->total_claimable) return E_CLAIMABLE_DECREASED;
  u64 unpaid;
  err = sub_checked(c, total, p->total_claimed, &unpaid);
  if (err) return err;
  if (token_amount(vault) < unpaid) {
    LOG("pool: the rewards vault holds less than the unpaid claimable rewards");
    return E_REWARDS_NOT_FUNDED;
  }
  p->total_claimable = total;
  return 0;
}

/* lender_create {}: 0 pool (w), 1 lender (w), 2 user (s, w: pays), 3 system program. */
static u64 lender_create(ctx_t *c) {
  if (c->in.data_len != 1) return E_INVALID_INSTRUCTION;
  pool_t *p;
  u64 err = need(c, 4);
  if (!err) err = pool_at(c, 0, &p);
  if (!err) err = writable_at(c, 0);
  if (!err) err = writable_at(c, 1);
  if (!err) err = writable_at(c, 2);
  if (!err) err = signer_at(c, 2);
  if (err) return err;
  if (!is_system_program(c->accounts[3].key)) return E_INVALID_PROGRAM;
  u64 lenders;
  err = add_checked(c, p->lenders, 1, &lenders);
  if (err) return err;
  const u8 *pool_key = c->accounts[0].key->bytes;
  const u8 *user = c->accounts[2].key->bytes;
  u8 bump[1];
  SolSignerSeed s[4] = {{(const u8 *)"lender", 6}, {pool_key, 32}, {user, 32}, {bump, 1}};
  err = fresh_pda(c, 1, s, 3, bump);
  if (err) return err;
  SolSignerSeeds signer = {s, 4};
  const new_account_t lender_account = {2, 1, LENDER_BYTES, false};
  err = create_pda(c, &lender_account, &signer);
  if (err) return err;
  lender_t *l = (lender_t *)c->accounts[1].data;
  mem_zero(l, LENDER_BYTES);
  mem_copy(l->magic, LENDER_MAGIC, 8);
  l->version = LENDER_VERSION;
  l->bump = bump[0];
  mem_copy(l->pool, pool_key, 32);
  mem_copy(l->user, user, 32);
  p->lenders = lenders;
  return 0;
}

/* The accounts lender_deposit and lender_claim share: 0 pool (w), 1 lender (w), 2 user (s),
   3 the user's token account (w), 4 a vault (w), 5 token program. */
static u64 lender_accounts(const ctx_t *c, pool_t **p, lender_t **l) {
  u64 err = need(c, 6);
  if (!err) err = pool_at(c, 0, p);
  if (!err) err = signer_at(c, 2);
  if (!err) err = lender_at(c, 1, 0, 2, l);
  if (!err) err = writable_at(c, 0);
  if (!err) err = writable_at(c, 1);
  if (!err) err = writable_at(c, 3);
  if (!err) err = writable_at(c, 4);
  if (err) return err;
  if (!is_token_program(&c->accounts[5])) return E_INVALID_PROGRAM;
  /* The user's account is never a vault (a claim into the rewards vault would pay no one). */
  if (key_eq(c->accounts[3].key, c->accounts[4].key)) return E_INVALID_TOKEN_ACCOUNT;
  return 0;
}

/* lender_deposit {amount u64}: the shared accounts, vault = the collateral vault. */
static u64 lender_deposit(ctx_t *c) {
  if (c->in.data_len != 9) return E_INVALID_INSTRUCTION;
  u64 amount = rd64(c->in.data + 1);
  pool_t *p;
  lender_t *l;
  u64 err = lender_accounts(c, &p, &l);
  if (err) return err;
  if (!mem_eq(c->accounts[4].key->bytes, p->collateral_vault, 32)) return E_INVALID_VAULT;
  const SolAccountInfo *source = &c->accounts[3];
  if (!is_token_account(source, p->collateral_mint, c->accounts[2].key->bytes)) {
    LOG("pool: the source is not the user's token account of the collateral mint");
    return E_INVALID_TOKEN_ACCOUNT;
  }
  if (p->frozen) return E_POOL_FROZEN;
  if (amount == 0) return E_INVALID_AMOUNT;
  if (token_amount(source) < amount) return E_INSUFFICIENT_FUNDS;
  u64 total, mine;
  err = add_checked(c, p->total_deposited, amount, &total);
  if (!err) err = add_checked(c, l->deposited, amount, &mine);
  if (err) return err;
  if (total > p->max_deposit) {
    LOG("pool: the deposit would pass the pool's cap");
    return E_CAP_EXCEEDED;
  }
  token_transfer_t t = {source->key, c->accounts[4].key, c->accounts[2].key, amount};
  if (token_transfer(&t, c->accounts, c->n, NULL) != 0) return E_CPI_FAILED;
  p->total_deposited = total;
  l->deposited = mine;
  return 0;
}

/* lender_claim {}: the shared accounts, vault = the rewards vault. Pays everything the
   lender is owed and has not been paid. */
static u64 lender_claim(ctx_t *c) {
  if (c->in.data_len != 1) return E_INVALID_INSTRUCTION;
  pool_t *p;
  lender_t *l;
  u64 err = lender_accounts(c, &p, &l);
  if (err) return err;
  const SolAccountInfo *vault = &c->accounts[4];
  if (!mem_eq(vault->key->bytes, p->rewards_vault, 32)) return E_INVALID_VAULT;
  if (!is_token_account(&c->accounts[3], p->rewards_mint, NULL)) return E_INVALID_TOKEN_ACCOUNT;
  if (p->total_deposited == 0) return E_NOTHING_DEPOSITED;
  u64 owed, pay, claimed_total, claimed_mine;
  err = mul_div_floor(l->deposited, p->total_claimable, p->total_deposited, &owed);
  if (!err) err = sub_checked(c, owed, l->claimed, &pay);
  if (err) return err;
  if (pay == 0) return E_NOTHING_TO_CLAIM;
  err = add_checked(c, p->total_claimed, pay, &claimed_total);
  if (!err) err = add_checked(c, l->claimed, pay, &claimed_mine);
  if (err) return err;
  if (claimed_total > p->total_claimable) return E_OVERFLOW;
  if (token_amount(vault) < pay) return E_INSUFFICIENT_FUNDS;
  pool_seeds_t s;
  pool_seeds(p, &s);
  SolSignerSeeds signer = {s.seeds, 4};
  token_transfer_t t = {vault->key, c->accounts[3].key, c->accounts[0].key, pay};
  if (token_transfer(&t, c->accounts, c->n, &signer) != 0) return E_CPI_FAILED;
  p->total_claimed = claimed_total;
  l->claimed = claimed_mine;
  return 0;
}

u64 entrypoint(const u8 *input) {
  ctx_t c;
  parse_ctx(input, MAX_ACCOUNTS, &ERRORS, &c);
  if (c.in.data_len < 1) return E_INVALID_INSTRUCTION;
  switch (c.in.data[0]) {
    case IX_POOL_CREATE: return pool_create(&c);
    case IX_POOL_UPDATE: return pool_update(&c);
    case IX_POOL_EXTRACT: return pool_extract(&c);
    case IX_POOL_CLAIMABLE: return pool_claimable(&c);
    case IX_LENDER_CREATE: return lender_create(&c);
    case IX_LENDER_DEPOSIT: return lender_deposit(&c);
    case IX_LENDER_CLAIM: return lender_claim(&c);
    default: return E_INVALID_INSTRUCTION;
  }
}
