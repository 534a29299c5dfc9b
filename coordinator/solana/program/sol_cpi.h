/*
 * sol_cpi.h: cross-program invocation and program-derived addresses, for programs that call
 * other programs (the mining pool calls SPL Token and the system program; a treasurer would
 * call the coordinator). Include after sol.h.
 *
 * The structs are the ones the runtime's C ABI reads (Agave's `sol_invoke_signed_c`):
 * SolAccountInfo points into the program input, so {@link sol_parse_accounts} fills them
 * with pointers to the serialized key, lamports, data and owner; after a CPI the runtime
 * writes the callee's changes back there, and the caller sees them through the same pointers.
 *
 * Syscalls (resolved by name by the loader, like sol.h's): sol_invoke_signed_c,
 * sol_create_program_address, sol_try_find_program_address, sol_get_rent_sysvar.
 */
#ifndef PSYCHE_SOL_CPI_H
#define PSYCHE_SOL_CPI_H

#include "sol.h"

/* A 32-byte address. */
typedef struct {
  u8 bytes[32];
} SolPubkey;

/* One account of a program's input, as the runtime's C ABI lays it out (56 bytes). */
typedef struct {
  SolPubkey *key;
  u64 *lamports;
  u64 data_len;
  u8 *data;
  SolPubkey *owner;
  u64 rent_epoch;
  bool is_signer;
  bool is_writable;
  bool executable;
} SolAccountInfo;
_Static_assert(sizeof(SolAccountInfo) == 56, "SolAccountInfo is the runtime's C layout");

/* One account of an instruction to invoke. */
typedef struct {
  SolPubkey *pubkey;
  bool is_writable;
  bool is_signer;
} SolAccountMeta;
_Static_assert(sizeof(SolAccountMeta) == 16, "SolAccountMeta is the runtime's C layout");

/* An instruction to invoke. */
typedef struct {
  SolPubkey *program_id;
  SolAccountMeta *accounts;
  u64 account_len;
  u8 *data;
  u64 data_len;
} SolInstruction;

/* One seed of a program-derived address (at most 32 bytes; at most 16 seeds). */
typedef struct {
  const u8 *addr;
  u64 len;
} SolSignerSeed;

/* The seeds of one PDA that signs an invocation. */
typedef struct {
  const SolSignerSeed *addr;
  u64 len;
} SolSignerSeeds;

/* The Rent sysvar; exemption_threshold is an f64, kept as its bits (no floats in sBPF).
   SIMD-0194 renames lamports_per_byte_year to lamports_per_byte; the layout is the same. */
typedef struct {
  u64 lamports_per_byte_year;
  u64 exemption_threshold_bits;
  u8 burn_percent;
} SolRent;

extern u64 sol_invoke_signed_c(const SolInstruction *instruction, const SolAccountInfo *infos,
                               int infos_len, const SolSignerSeeds *signers, int signers_len);
extern u64 sol_create_program_address(const SolSignerSeed *seeds, u64 seeds_len,
                                      const SolPubkey *program_id, SolPubkey *out);
extern u64 sol_try_find_program_address(const SolSignerSeed *seeds, u64 seeds_len,
                                        const SolPubkey *program_id, SolPubkey *out,
                                        u8 *bump_out);
extern u64 sol_get_rent_sysvar(void *rent);

/* The instruction's accounts (the first `max`), its data and the program id. */
typedef struct {
  u64 num_accounts;
  const u8 *data;
  u64 data_len;
  const SolPubkey *program_id;
} sol_parsed_t;

/*
 * Parses the program input (loader v2/v3 aligned serialization, sol.h) into SolAccountInfo
 * structs whose pointers address the input itself, as a CPI needs. Accounts past `max` are
 * skipped (counted in num_accounts). A duplicate copies the info it repeats.
 */
static void sol_parse_accounts(const u8 *in, SolAccountInfo *infos, u64 max, sol_parsed_t *out) {
  u64 n = *(const u64 *)in;
  in += 8;
  out->num_accounts = n;
  for (u64 i = 0; i < n; i++) {
    u8 dup = in[0];
    if (dup != 0xff) {
      if (i < max && dup < max) infos[i] = infos[dup];
      in += 8;
      continue;
    }
    SolAccountInfo info;
    info.is_signer = in[1] != 0;
    info.is_writable = in[2] != 0;
    info.executable = in[3] != 0;
    in += 8;
    info.key = (SolPubkey *)in;
    in += 32;
    info.owner = (SolPubkey *)in;
    in += 32;
    info.lamports = (u64 *)in;
    in += 8;
    info.data_len = *(const u64 *)in;
    in += 8;
    info.data = (u8 *)in;
    in += info.data_len + ACCOUNT_REALLOC_PADDING;
    in = (const u8 *)(((u64)in + 7) & ~(u64)7);
    info.rent_epoch = *(const u64 *)in;
    in += 8;
    if (i < max) infos[i] = info;
  }
  out->data_len = *(const u64 *)in;
  in += 8;
  out->data = in;
  in += out->data_len;
  out->program_id = (const SolPubkey *)in;
}

static inline bool key_eq(const SolPubkey *a, const SolPubkey *b) {
  return mem_eq(a->bytes, b->bytes, 32);
}

/* Both Solana and SPL Token use 0 for "no error"; a failed CPI aborts the transaction. */
static inline u64 sol_invoke(const SolInstruction *ix, const SolAccountInfo *infos, u64 n) {
  return sol_invoke_signed_c(ix, infos, (int)n, NULL, 0);
}
static inline u64 sol_invoke_signed(const SolInstruction *ix, const SolAccountInfo *infos, u64 n,
                                    const SolSignerSeeds *signers, u64 signers_len) {
  return sol_invoke_signed_c(ix, infos, (int)n, signers, (int)signers_len);
}

/* The IEEE-754 bits of the exemption thresholds clusters use: 2.0 (two years of rent at
   3480 lamports per byte-year) and, since SIMD-0194, 1.0 (with 6960 lamports per byte). */
#define RENT_THRESHOLD_TWO 0x4000000000000000ull
#define RENT_THRESHOLD_ONE 0x3ff0000000000000ull
/* Bytes the runtime charges rent for on top of an account's data. */
#define RENT_ACCOUNT_OVERHEAD 128ull

/*
 * The rent-exempt balance of `space` bytes: (128 + space) * lamports_per_byte * threshold.
 * Returns false when the Rent sysvar is unreadable, its threshold is neither 1.0 nor 2.0 (sBPF
 * has no floats; no cluster uses another), or the product overflows.
 */
static bool rent_exempt_lamports(u64 space, u64 *out) {
  SolRent rent;
  if (sol_get_rent_sysvar(&rent) != 0) return false;
  u64 factor;
  if (rent.exemption_threshold_bits == RENT_THRESHOLD_ONE) {
    factor = 1;
  } else if (rent.exemption_threshold_bits == RENT_THRESHOLD_TWO) {
    factor = 2;
  } else {
    return false;
  }
  u64 bytes = RENT_ACCOUNT_OVERHEAD + space;
  if (bytes < space) return false;
  if (rent.lamports_per_byte_year != 0 &&
      bytes > ~0ull / rent.lamports_per_byte_year / factor) {
    return false;
  }
  *out = bytes * rent.lamports_per_byte_year * factor;
  return true;
}

/* The system program (all zero bytes). */
static inline bool is_system_program(const SolPubkey *key) { return is_zero(key->bytes, 32); }

/* What system_create_account creates. */
typedef struct {
  SolPubkey *payer;        /* signs, pays */
  SolPubkey *target;       /* the new account: a PDA that `signer` signs for */
  const SolPubkey *owner;  /* the program that will own it */
  u64 lamports;
  u64 space;
} sol_create_account_t;

/*
 * System program CreateAccount, signed by the payer (its signature carries into the CPI) and by
 * the PDA seeds `signer` of the target. `infos` must hold the payer, the target and the system
 * program. The system program refuses a target that already holds lamports or data.
 */
static u64 system_create_account(const sol_create_account_t *c, const SolAccountInfo *infos,
                                 u64 n, const SolSignerSeeds *signer) {
  SolPubkey system_program;
  mem_zero(system_program.bytes, 32);
  u8 data[52];
  wr32(data, 0); /* CreateAccount */
  wr64(data + 4, c->lamports);
  wr64(data + 12, c->space);
  mem_copy(data + 20, c->owner->bytes, 32);
  SolAccountMeta metas[2] = {{c->payer, true, true}, {c->target, true, true}};
  SolInstruction ix = {&system_program, metas, 2, data, sizeof(data)};
  return sol_invoke_signed(&ix, infos, n, signer, 1);
}

#endif
