/*
 * spl_token.h: what a program needs to hold and move SPL tokens (the Token program
 * `TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA`; Token-2022 is not accepted): the byte
 * layouts of a mint (82 bytes) and a token account (165 bytes), and the Transfer and
 * InitializeAccount3 instructions by CPI. Include after sol_cpi.h.
 */
#ifndef PSYCHE_SPL_TOKEN_H
#define PSYCHE_SPL_TOKEN_H

#include "sol_cpi.h"

#define TOKEN_MINT_BYTES 82
#define TOKEN_ACCOUNT_BYTES 165

/* Mint: mint_authority COption<Pubkey> (36), supply u64, decimals u8, is_initialized u8,
   freeze_authority COption<Pubkey> (36). */
#define MINT_IS_INITIALIZED 45
/* Token account: mint, owner, amount u64, delegate COption<Pubkey> (36), state u8
   (0 uninitialized, 1 initialized, 2 frozen), is_native COption<u64> (12), delegated_amount u64,
   close_authority COption<Pubkey> (36). */
#define TOKEN_MINT 0
#define TOKEN_OWNER 32
#define TOKEN_AMOUNT 64
#define TOKEN_DELEGATE_TAG 72
#define TOKEN_STATE 108
#define TOKEN_IS_NATIVE_TAG 109
#define TOKEN_CLOSE_AUTHORITY_TAG 129
#define TOKEN_STATE_INITIALIZED 1

static const u8 SPL_TOKEN_PROGRAM_ID[32] = {
    0x06, 0xdd, 0xf6, 0xe1, 0xd7, 0x65, 0xa1, 0x93, 0xd9, 0xcb, 0xe1, 0x46, 0xce, 0xeb, 0x79, 0xac,
    0x1c, 0xb4, 0x85, 0xed, 0x5f, 0x5b, 0x37, 0x91, 0x3a, 0x8c, 0xf5, 0x85, 0x7e, 0xff, 0x00, 0xa9,
};

static inline bool is_token_program(const SolAccountInfo *info) {
  return mem_eq(info->key->bytes, SPL_TOKEN_PROGRAM_ID, 32);
}

/* An initialized mint of the Token program. */
static bool is_mint(const SolAccountInfo *info) {
  return mem_eq(info->owner->bytes, SPL_TOKEN_PROGRAM_ID, 32) &&
         info->data_len == TOKEN_MINT_BYTES && info->data[MINT_IS_INITIALIZED] == 1;
}

/* An initialized, unfrozen token account of `mint` (any owner when `owner` is NULL). */
static bool is_token_account(const SolAccountInfo *info, const u8 *mint, const u8 *owner) {
  if (!mem_eq(info->owner->bytes, SPL_TOKEN_PROGRAM_ID, 32) ||
      info->data_len != TOKEN_ACCOUNT_BYTES) {
    return false;
  }
  const u8 *d = info->data;
  if (d[TOKEN_STATE] != TOKEN_STATE_INITIALIZED || !mem_eq(d + TOKEN_MINT, mint, 32)) return false;
  return owner == NULL || mem_eq(d + TOKEN_OWNER, owner, 32);
}

/* A token account only its owner can move: no delegate, no close authority, not native. */
static inline bool token_account_is_plain(const SolAccountInfo *info) {
  const u8 *d = info->data;
  return rd32(d + TOKEN_DELEGATE_TAG) == 0 && rd32(d + TOKEN_IS_NATIVE_TAG) == 0 &&
         rd32(d + TOKEN_CLOSE_AUTHORITY_TAG) == 0;
}

static inline u64 token_amount(const SolAccountInfo *info) {
  return rd64(info->data + TOKEN_AMOUNT);
}

/* What token_transfer moves. */
typedef struct {
  SolPubkey *source;
  SolPubkey *destination;
  SolPubkey *authority; /* the source's owner: a signer of the transaction, or a PDA */
  u64 amount;
} token_transfer_t;

/* Token Transfer (tag 3); `signer` is the authority's PDA seeds, or NULL when it signed. */
static u64 token_transfer(const token_transfer_t *t, const SolAccountInfo *infos, u64 n,
                          const SolSignerSeeds *signer) {
  SolPubkey program;
  mem_copy(program.bytes, SPL_TOKEN_PROGRAM_ID, 32);
  u8 data[9];
  data[0] = 3;
  wr64(data + 1, t->amount);
  SolAccountMeta metas[3] = {
      {t->source, true, false}, {t->destination, true, false}, {t->authority, false, true}};
  SolInstruction ix = {&program, metas, 3, data, sizeof(data)};
  return sol_invoke_signed(&ix, infos, n, signer, signer == NULL ? 0 : 1);
}

/* Token InitializeAccount3 (tag 18): `account` (already created, owned by the Token program)
   becomes a token account of `mint` owned by `owner`. */
static u64 token_initialize_account(SolPubkey *account, SolPubkey *mint, const SolPubkey *owner,
                                    const SolAccountInfo *infos, u64 n) {
  SolPubkey program;
  mem_copy(program.bytes, SPL_TOKEN_PROGRAM_ID, 32);
  u8 data[33];
  data[0] = 18;
  mem_copy(data + 1, owner->bytes, 32);
  SolAccountMeta metas[2] = {{account, true, false}, {mint, false, false}};
  SolInstruction ix = {&program, metas, 2, data, sizeof(data)};
  return sol_invoke(&ix, infos, n);
}

#endif
