/*
 * Native replay of recorded program transactions (coordinator/solana/program/native_replay_test.ts).
 *
 * The program's C (program/program.c) is compiled for the host with AddressSanitizer and
 * UndefinedBehaviorSanitizer and linked with this file, which stands in for the Solana
 * runtime: it implements the syscalls the program calls (SHA-256 included, so nothing
 * but libc is needed), serializes each recorded instruction into the loader's input
 * format, calls `entrypoint`, keeps the account's writes only on success (as the runtime
 * does), and compares the result code and the SHA-256 of the account with what litesvm
 * recorded. Prints "replayed N steps, M mismatches" and exits non-zero on a mismatch.
 *
 * Trace format (little-endian): program id [32], coordinator key [32], account [ACCOUNT_SIZE],
 * then per step: unix_timestamp i64, slot u64, has_signer u8, signer [32], data length
 * u64, data, expected result u64 (0 = success), sha256 of the account afterwards [32].
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long u64;
typedef struct {
  const unsigned char *addr;
  u64 len;
} slice_t;

/* The account's size comes from the layout table: the test passes -DACCOUNT_SIZE=... */
#ifndef ACCOUNT_SIZE
#error "compile with -DACCOUNT_SIZE=<the coordinator account's size>"
#endif
#define REALLOC_PADDING 10240

/* ---- SHA-256 (FIPS 180-4) ---- */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

typedef struct {
  uint32_t h[8];
  unsigned char block[64];
  size_t fill;
  uint64_t bytes;
} sha256_t;

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(sha256_t *s, const unsigned char *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
           p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
  uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
  s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void sha256_init(sha256_t *s) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof(iv));
  s->fill = 0;
  s->bytes = 0;
}

static void sha256_update(sha256_t *s, const unsigned char *p, size_t n) {
  s->bytes += n;
  while (n > 0) {
    size_t take = 64 - s->fill < n ? 64 - s->fill : n;
    memcpy(s->block + s->fill, p, take);
    s->fill += take;
    p += take;
    n -= take;
    if (s->fill == 64) {
      sha256_block(s, s->block);
      s->fill = 0;
    }
  }
}

static void sha256_final(sha256_t *s, unsigned char *out) {
  uint64_t bits = s->bytes * 8;
  unsigned char pad = 0x80, zero = 0, len[8];
  sha256_update(s, &pad, 1);
  while (s->fill != 56) sha256_update(s, &zero, 1);
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
  sha256_update(s, len, 8);
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < 4; k++) out[4 * i + k] = (unsigned char)(s->h[i] >> (24 - 8 * k));
}

/* ---- the syscalls the program calls ---- */
static long long clock_ts;
static u64 clock_slot;

void sol_log_(const char *message, u64 len) { (void)message, (void)len; }
void sol_log_64_(u64 a, u64 b, u64 c, u64 d, u64 e) { (void)a, (void)b, (void)c, (void)d, (void)e; }
u64 sol_sha256(const slice_t *slices, u64 count, unsigned char *out) {
  sha256_t s;
  sha256_init(&s);
  for (u64 i = 0; i < count; i++) sha256_update(&s, slices[i].addr, slices[i].len);
  sha256_final(&s, out);
  return 0;
}
u64 sol_get_clock_sysvar(void *out) {
  u64 clock[5] = {clock_slot, 0, 0, 0, (u64)clock_ts};
  memcpy(out, clock, sizeof(clock));
  return 0;
}
void sol_memcpy_(void *dst, const void *src, u64 n) {
  const char *d = dst, *s = src;
  if (d < s + n && s < d + n) {
    fprintf(stderr, "sol_memcpy_ with overlapping ranges (the runtime rejects it)\n");
    abort();
  }
  memcpy(dst, src, n);
}
void sol_memset_(void *dst, int byte, u64 n) { memset(dst, byte, n); }
void sol_memcmp_(const void *a, const void *b, u64 n, int *result) { *result = memcmp(a, b, n); }
/* The join deposit's CPI and PDA syscalls: the recorded runs never turn the deposit on (its tests
   run in litesvm with the real SPL Token program), so reaching one is a replay failure. */
static void no_cpi(const char *name) {
  fprintf(stderr, "%s: the native replay has no other programs to call\n", name);
  abort();
}
u64 sol_invoke_signed_c(const void *ix, const void *infos, int n, const void *seeds, int m) {
  (void)ix, (void)infos, (void)n, (void)seeds, (void)m;
  no_cpi("sol_invoke_signed_c");
  return 1;
}
u64 sol_create_program_address(const void *seeds, u64 n, const void *program, void *out) {
  (void)seeds, (void)n, (void)program, (void)out;
  no_cpi("sol_create_program_address");
  return 1;
}
u64 sol_try_find_program_address(const void *seeds, u64 n, const void *program, void *out,
                                 unsigned char *bump) {
  (void)seeds, (void)n, (void)program, (void)out, (void)bump;
  no_cpi("sol_try_find_program_address");
  return 1;
}
u64 sol_get_rent_sysvar(void *rent) {
  (void)rent;
  no_cpi("sol_get_rent_sysvar");
  return 1;
}

u64 entrypoint(const unsigned char *input);

/* Appends one serialized account (loader v2/v3 aligned layout); returns its data. */
static unsigned char *put_account(unsigned char **p, const unsigned char *key, const unsigned char *owner,
                                  int is_signer, int is_writable, const unsigned char *data, u64 len) {
  unsigned char *q = *p;
  q[0] = 0xff, q[1] = (unsigned char)is_signer, q[2] = (unsigned char)is_writable, q[3] = 0;
  q += 8;
  memcpy(q, key, 32), q += 32;
  memcpy(q, owner, 32), q += 32;
  u64 lamports = 1000000000ull;
  memcpy(q, &lamports, 8), q += 8;
  memcpy(q, &len, 8), q += 8;
  unsigned char *at = q;
  if (len) memcpy(q, data, len);
  q += len + REALLOC_PADDING;
  q = (unsigned char *)(((uintptr_t)q + 7) & ~(uintptr_t)7);
  q += 8; /* rent epoch */
  *p = q;
  return at;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: replay TRACE\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *t = malloc((size_t)size);
  if (fread(t, 1, (size_t)size, f) != (size_t)size) return 2;
  fclose(f);
  const unsigned char *program = t, *coordinator = t + 32;
  unsigned char *account = malloc(ACCOUNT_SIZE);
  memcpy(account, t + 64, ACCOUNT_SIZE);
  static const unsigned char system_owner[32] = {0};
  size_t cap = 8 + 2 * (96 + ACCOUNT_SIZE + REALLOC_PADDING + 16) + 8 + 65536 + 32;
  unsigned char *input = aligned_alloc(16, (cap + 15) & ~(size_t)15);
  long at = 64 + ACCOUNT_SIZE;
  int steps = 0, mismatches = 0;
  while (at < size) {
    u64 ts, slot, len, expected;
    memcpy(&ts, t + at, 8), memcpy(&slot, t + at + 8, 8), at += 16;
    int has_signer = t[at];
    const unsigned char *signer = t + at + 1;
    at += 33;
    memcpy(&len, t + at, 8), at += 8;
    const unsigned char *data = t + at;
    at += (long)len;
    memcpy(&expected, t + at, 8), at += 8;
    const unsigned char *expected_hash = t + at;
    at += 32;
    clock_ts = (long long)ts, clock_slot = slot;
    memset(input, 0, cap);
    unsigned char *p = input;
    u64 n = has_signer ? 2 : 1;
    memcpy(p, &n, 8), p += 8;
    unsigned char *data_at = put_account(&p, coordinator, program, 0, 1, account, ACCOUNT_SIZE);
    if (has_signer) put_account(&p, signer, system_owner, 1, 0, NULL, 0);
    memcpy(p, &len, 8), p += 8;
    memcpy(p, data, len), p += len;
    memcpy(p, program, 32);
    u64 result = entrypoint(input);
    if (result == 0) memcpy(account, data_at, ACCOUNT_SIZE);
    unsigned char hash[32];
    slice_t whole = {account, ACCOUNT_SIZE};
    sol_sha256(&whole, 1, hash);
    if (result != expected || memcmp(hash, expected_hash, 32) != 0) {
      mismatches++;
      fprintf(stderr, "step %d (tag %d): native returned %llu, the SVM %llu; account %s\n", steps,
              data[0], result, expected, memcmp(hash, expected_hash, 32) ? "differs" : "same");
    }
    steps++;
  }
  printf("replayed %d steps, %d mismatches\n", steps, mismatches);
  free(input), free(account), free(t);
  return mismatches != 0;
}
