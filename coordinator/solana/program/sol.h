/*
 * sol.h: the freestanding runtime of the coordinator program. No libc: fixed-width
 * types, the Solana syscalls the program calls (resolved by name by the loader; the
 * project's linker turns each into a dynamic relocation), and the deserializer of the
 * program input (loader v2/v3 aligned serialization, reference/solana.md "Program ABI").
 */
#ifndef PSYCHE_SOL_H
#define PSYCHE_SOL_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed long long i64;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)

_Static_assert(sizeof(u16) == 2 && sizeof(u32) == 4 && sizeof(u64) == 8, "integer widths");
_Static_assert(sizeof(void *) == 8, "64-bit pointers");

/* sol_sha256 takes a list of byte slices. */
typedef struct {
  const u8 *addr;
  u64 len;
} sol_bytes_t;

/* The Clock sysvar (sol_get_clock_sysvar). */
typedef struct {
  u64 slot;
  i64 epoch_start_timestamp;
  u64 epoch;
  u64 leader_schedule_epoch;
  i64 unix_timestamp;
} sol_clock_t;

extern void sol_log_(const char *message, u64 len);
extern void sol_log_64_(u64 a, u64 b, u64 c, u64 d, u64 e);
extern u64 sol_sha256(const sol_bytes_t *slices, u64 count, u8 *out);
extern u64 sol_get_clock_sysvar(void *clock);
extern void sol_memcpy_(void *dst, const void *src, u64 n);
extern void sol_memset_(void *dst, int byte, u64 n);
extern void sol_memcmp_(const void *a, const void *b, u64 n, int *result);

/* Logs a string literal. */
#define LOG(literal) sol_log_((literal), sizeof(literal) - 1)

static inline void mem_copy(void *dst, const void *src, u64 n) {
  if (n > 0) sol_memcpy_(dst, src, n);
}
static inline void mem_zero(void *dst, u64 n) {
  if (n > 0) sol_memset_(dst, 0, n);
}
static inline bool mem_eq(const void *a, const void *b, u64 n) {
  int r = 0;
  if (n == 0) return true;
  sol_memcmp_(a, b, n, &r);
  return r == 0;
}
static inline bool is_zero(const u8 *p, u64 n) {
  for (u64 i = 0; i < n; i++)
    if (p[i] != 0) return false;
  return true;
}

/* Little-endian reads and writes at any alignment (instruction data is unaligned). */
static inline u16 rd16(const u8 *p) { return (u16)(p[0] | ((u16)p[1] << 8)); }
static inline u32 rd32(const u8 *p) {
  return (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) | ((u32)p[3] << 24);
}
static inline u64 rd64(const u8 *p) { return (u64)rd32(p) | ((u64)rd32(p + 4) << 32); }
static inline void wr32(u8 *p, u32 v) {
  for (int i = 0; i < 4; i++) p[i] = (u8)(v >> (8 * i));
}
static inline void wr64(u8 *p, u64 v) {
  for (int i = 0; i < 8; i++) p[i] = (u8)(v >> (8 * i));
}

/* SHA-256 of one or two slices (`blen == 0`: only the first). */
static inline void sha256_2(const u8 *a, u64 alen, const u8 *b, u64 blen, u8 *out) {
  sol_bytes_t s[2] = {{a, alen}, {b, blen}};
  sol_sha256(s, blen == 0 ? 1 : 2, out);
}

/* One account of the program input. */
typedef struct {
  const u8 *key;
  const u8 *owner;
  u64 *lamports;
  u64 data_len;
  u8 *data;
  bool is_signer;
  bool is_writable;
} account_info_t;

/* The instruction's accounts (the first MAX_INPUT_ACCOUNTS), data and program id. */
#define MAX_INPUT_ACCOUNTS 4
typedef struct {
  account_info_t accounts[MAX_INPUT_ACCOUNTS];
  u64 num_accounts;
  const u8 *data;
  u64 data_len;
  const u8 *program_id;
} input_t;

/* Bytes the runtime reserves after every account's data for in-place growth. */
#define ACCOUNT_REALLOC_PADDING 10240

static void parse_input(const u8 *in, input_t *out) {
  u64 n = *(const u64 *)in;
  in += 8;
  out->num_accounts = n;
  for (u64 i = 0; i < n; i++) {
    u8 dup = in[0];
    if (dup != 0xff) {
      if (i < MAX_INPUT_ACCOUNTS && dup < MAX_INPUT_ACCOUNTS) {
        account_info_t *a = &out->accounts[i];
        const account_info_t *b = &out->accounts[dup];
        a->key = b->key;
        a->owner = b->owner;
        a->lamports = b->lamports;
        a->data_len = b->data_len;
        a->data = b->data;
        a->is_signer = b->is_signer;
        a->is_writable = b->is_writable;
      }
      in += 8;
      continue;
    }
    account_info_t info;
    info.is_signer = in[1] != 0;
    info.is_writable = in[2] != 0;
    in += 8;
    info.key = in;
    in += 32;
    info.owner = in;
    in += 32;
    info.lamports = (u64 *)in;
    in += 8;
    info.data_len = *(const u64 *)in;
    in += 8;
    info.data = (u8 *)in;
    in += info.data_len + ACCOUNT_REALLOC_PADDING;
    in = (const u8 *)(((u64)in + 7) & ~(u64)7);
    in += 8; /* rent epoch */
    if (i < MAX_INPUT_ACCOUNTS) {
      account_info_t *a = &out->accounts[i];
      a->key = info.key;
      a->owner = info.owner;
      a->lamports = info.lamports;
      a->data_len = info.data_len;
      a->data = info.data;
      a->is_signer = info.is_signer;
      a->is_writable = info.is_writable;
    }
  }
  out->data_len = *(const u64 *)in;
  in += 8;
  out->data = in;
  in += out->data_len;
  out->program_id = in;
}

#endif
