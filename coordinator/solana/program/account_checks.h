/*
 * account_checks.h: the account checks and checked arithmetic of the programs that parse their
 * input into SolAccountInfo (the mining pool, the treasurer), and the creation of their PDAs.
 * Include after spl_token.h, with PROGRAM_NAME defined as the string literal that starts the
 * checks' log lines ("pool"), so that each program's logs read as before.
 *
 * Each program numbers its errors itself, and the numbers are part of its ABI (pool/errors.ts,
 * treasurer/errors.ts), so the checks take them from the program's program_errors_t, which the
 * context carries. The codes are read only on a refusal; carrying them costs an instruction or
 * three per call (docs/benchmarks.md).
 */
#ifndef PSYCHE_ACCOUNT_CHECKS_H
#define PSYCHE_ACCOUNT_CHECKS_H

#include "sol_cpi.h"
#include "spl_token.h"

#ifndef PROGRAM_NAME
#error "define PROGRAM_NAME (the log lines' prefix) before including account_checks.h"
#endif

/* The program's codes for the refusals the shared checks make. */
typedef struct {
  u64 not_enough_accounts;
  u64 missing_signature;
  u64 not_writable;
  u64 wrong_address;       /* an account is not at its PDA */
  u64 already_initialized; /* a PDA to create holds lamports or data */
  u64 unsupported_rent;
  u64 cpi_failed;
  u64 overflow;
  u64 underflow;
} program_errors_t;

/* The most accounts ctx_t holds; parse_ctx keeps at most the program's own max of them. */
#define PROGRAM_MAX_ACCOUNTS 8

typedef struct {
  SolAccountInfo accounts[PROGRAM_MAX_ACCOUNTS];
  sol_parsed_t in;
  u64 n; /* accounts usable in accounts[] (min of num_accounts and the program's max) */
  const program_errors_t *errors;
} ctx_t;

/* Parses the input, keeping its first `max` accounts (at most PROGRAM_MAX_ACCOUNTS). */
static inline void parse_ctx(const u8 *input, u64 max, const program_errors_t *errors, ctx_t *c) {
  sol_parse_accounts(input, c->accounts, max, &c->in);
  c->n = c->in.num_accounts < max ? c->in.num_accounts : max;
  c->errors = errors;
}

/* ---- checked arithmetic ---- */

static inline u64 add_checked(const ctx_t *c, u64 a, u64 b, u64 *out) {
  if (a > ~0ull - b) return c->errors->overflow;
  *out = a + b;
  return 0;
}
static inline u64 sub_checked(const ctx_t *c, u64 a, u64 b, u64 *out) {
  if (b > a) return c->errors->underflow;
  *out = a - b;
  return 0;
}

/* ---- accounts ---- */

static u64 need(const ctx_t *c, u64 n) {
  return c->in.num_accounts < n ? c->errors->not_enough_accounts : 0;
}

static u64 signer_at(const ctx_t *c, u64 i) {
  if (!c->accounts[i].is_signer) {
    LOG(PROGRAM_NAME ": an account that must sign did not");
    return c->errors->missing_signature;
  }
  return 0;
}

static u64 writable_at(const ctx_t *c, u64 i) {
  if (!c->accounts[i].is_writable) {
    LOG(PROGRAM_NAME ": an account that must be writable is not");
    return c->errors->not_writable;
  }
  return 0;
}

/* A kind of account this program owns: its size, and the magic (8 bytes) and version byte its
   data starts with. It holds pointers, which the linker refuses in .rodata: build it on the
   stack where it is used (a local, not a static). */
typedef struct {
  u64 size;
  const u8 *magic;
  u8 version;
  u64 invalid;         /* the error when an account is not one */
  const char *log;     /* logged when the owner or the size is wrong */
  u64 log_len;
} account_kind_t;

/* The `log` and `log_len` of an account_kind_t, from a string literal. */
#define KIND_LOG(literal) (literal), sizeof(literal) - 1

/* Account `i` is an initialized account of this program of `kind`; `out` gets its data. */
static u64 program_account_at(const ctx_t *c, u64 i, const account_kind_t *kind, void **out) {
  const SolAccountInfo *info = &c->accounts[i];
  if (!key_eq(info->owner, c->in.program_id) || info->data_len != kind->size) {
    sol_log_(kind->log, kind->log_len);
    return kind->invalid;
  }
  if (!mem_eq(info->data, kind->magic, 8) || info->data[8] != kind->version) return kind->invalid;
  *out = info->data;
  return 0;
}

/* Account `i` must be empty (no lamports, no data) and at the PDA of `seeds` (bump found). */
static u64 fresh_pda(const ctx_t *c, u64 i, SolSignerSeed *seeds, u64 n_seeds, u8 *bump) {
  const SolAccountInfo *info = &c->accounts[i];
  SolPubkey expected;
  if (sol_try_find_program_address(seeds, n_seeds, c->in.program_id, &expected, bump) != 0) {
    return c->errors->wrong_address;
  }
  if (!key_eq(info->key, &expected)) {
    LOG(PROGRAM_NAME ": an account is not at its program-derived address");
    return c->errors->wrong_address;
  }
  if (*info->lamports != 0 || info->data_len != 0 || !is_system_program(info->owner)) {
    return c->errors->already_initialized;
  }
  return 0;
}

/* An account create_pda makes: accounts[target], paid by accounts[payer]. */
typedef struct {
  u64 payer;
  u64 target;
  u64 space;
  bool token_owned; /* owned by SPL Token (a vault); else by this program */
} new_account_t;

/* Creates a rent-exempt PDA; `signer` holds its seeds, ending with its bump. */
static u64 create_pda(const ctx_t *c, const new_account_t *a, const SolSignerSeeds *signer) {
  SolPubkey token;
  mem_copy(token.bytes, SPL_TOKEN_PROGRAM_ID, 32);
  sol_create_account_t create = {c->accounts[a->payer].key, c->accounts[a->target].key,
                                 a->token_owned ? &token : c->in.program_id, 0, a->space};
  if (!rent_exempt_lamports(a->space, &create.lamports)) {
    LOG(PROGRAM_NAME ": the Rent sysvar's exemption threshold is neither 1.0 nor 2.0");
    return c->errors->unsupported_rent;
  }
  if (system_create_account(&create, c->accounts, c->n, signer) != 0) return c->errors->cpi_failed;
  return 0;
}

#endif
