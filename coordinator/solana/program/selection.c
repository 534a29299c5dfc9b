/*
 * selection.c (part of the program.c unity build): witness bloom sizing and lookups,
 * the swap-or-not shuffle, committee/witness proof verification and the Cooldown's checkpointers.
 * Mirrors coordinator/core/bloom.ts, swap_or_not.ts, committee_selection.ts,
 * checkpointer_selection.ts and witness_quorum.ts.
 */

/*
 * Bloom parameters of a run capped at `n` clients, in integers (sBPF has no floats):
 * m = ceil(n * C) rounded up to a multiple of 64 and k = clamp(round(m * ln2 / n), 1, 32),
 * with C = -ln(0.01) / ln(2)^2 and ln 2 as 40-bit fixed-point constants.
 * coordinator/solana/reference/bloom_integer_test.ts checks that this equals bloom.ts's floating-point
 * witnessBloomParameters for every n in 1..65535.
 */
#define BLOOM_C_FP 10538883138827ull
#define BLOOM_LN2_FP 762123384785ull
#define BLOOM_FP_SHIFT 40

static void bloom_params(u64 n, u64 *bits, u64 *keys) {
  u64 one = 1ull << BLOOM_FP_SHIFT;
  u64 m = (n * BLOOM_C_FP + one - 1) >> BLOOM_FP_SHIFT;
  m = (m + 63) / 64 * 64;
  u64 k = ((m * BLOOM_LN2_FP) / n + (one >> 1)) >> BLOOM_FP_SHIFT;
  if (k < 1) k = 1;
  if (k > MAX_BLOOM_KEYS) k = MAX_BLOOM_KEYS;
  *bits = m;
  *keys = k;
}

/* Whether `item` (32 bytes) may be in the bloom: keyed FNV-1a-64 per key, bit h % m. */
static bool bloom_contains(const bloom_t *b, u64 num_bits, u64 num_keys, const u8 *item) {
  for (u64 k = 0; k < num_keys; k++) {
    u64 h = b->keys[k];
    for (int i = 0; i < 32; i++) {
      h ^= item[i];
      h *= 0x100000001b3ull;
    }
    u64 bit = h % num_bits;
    if ((b->bits[bit >> 3] & (1u << (bit & 7))) == 0) return false;
  }
  return true;
}

#define SHUFFLE_ROUND_COUNT 90

/* compute_shuffled_index: position of `index` in the swap-or-not permutation of [0, total). */
static u64 shuffled_index(u64 index, u64 total, const u8 *seed) {
  u8 buf[37];
  u8 digest[32];
  mem_copy(buf, seed, 32);
  u64 idx = index;
  for (u64 round = 0; round < SHUFFLE_ROUND_COUNT; round++) {
    buf[32] = (u8)round;
    sha256_2(buf, 33, NULL, 0, digest);
    u64 pivot = rd64(digest) % total;
    u64 flip = (pivot + total - idx) % total;
    u64 pos = idx > flip ? idx : flip;
    u32 block = (u32)(pos / 256);
    buf[33] = (u8)block;
    buf[34] = (u8)(block >> 8);
    buf[35] = (u8)(block >> 16);
    buf[36] = (u8)(block >> 24);
    sha256_2(buf, 37, NULL, 0, digest);
    u64 bit = (digest[(pos % 256) >> 3] >> (pos % 8)) & 1;
    if (bit) idx = flip;
  }
  return idx;
}

/*
 * The indices at `positions` (k of them) of the swap-or-not permutation of [0, total): every round
 * is its own inverse, so running the rounds backwards undoes shuffled_index. The rounds are the
 * outer loop, so each round's pivot is hashed once for all k, and its bits once per block met.
 */
static void unshuffled_indices(const u64 *positions, u64 k, u64 total, const u8 *seed, u64 *out) {
  u8 buf[37];
  u8 pivot_digest[32], bits[32];
  mem_copy(buf, seed, 32);
  for (u64 i = 0; i < k; i++) out[i] = positions[i];
  for (u64 round = SHUFFLE_ROUND_COUNT; round-- > 0;) {
    buf[32] = (u8)round;
    sha256_2(buf, 33, NULL, 0, pivot_digest);
    u64 pivot = rd64(pivot_digest) % total;
    u64 hashed_block = ~0ull;
    for (u64 i = 0; i < k; i++) {
      u64 idx = out[i];
      u64 flip = (pivot + total - idx) % total;
      u64 pos = idx > flip ? idx : flip;
      u64 block = pos / 256;
      if (block != hashed_block) {
        buf[33] = (u8)block;
        buf[34] = (u8)(block >> 8);
        buf[35] = (u8)(block >> 16);
        buf[36] = (u8)(block >> 24);
        sha256_2(buf, 37, NULL, 0, bits);
        hashed_block = block;
      }
      if ((bits[(pos % 256) >> 3] >> (pos % 8)) & 1) out[i] = flip;
    }
  }
}

/* sha256(sha256(u64le(random_seed)) || salt). */
static void salted_seed(u64 random_seed, const char *salt, u64 salt_len, u8 *out) {
  u8 le[8];
  u8 base[32];
  wr64(le, random_seed);
  sha256_2(le, 8, NULL, 0, base);
  sha256_2(base, 32, (const u8 *)salt, salt_len, out);
}

static u64 witness_seats(const config_t *c) {
  return c->witness_nodes == 0 ? MAX_WITNESSES : c->witness_nodes;
}

/* CommitteeSelection.verifyWitness for `round`. */
static bool verify_witness_proof(const config_t *c, const round_t *round, u64 index, u64 position,
                                 bool claim) {
  if (index >= round->clients_len) return false;
  u8 seed[32];
  salted_seed(round->random_seed, "witness", 7, seed);
  u64 actual = shuffled_index(index, round->clients_len, seed);
  return actual == position && claim == (actual < witness_seats(c));
}

/*
 * CommitteeSelection.verifyCommittee for `round` (machine_queries.ts roundSelection): no Verifier
 * committee, since verification_percent samples results (verification.c) instead of taking
 * clients out of training, so every position past the tie-breakers is a Trainer.
 */
static bool verify_committee_proof(const round_t *round, u64 index, u64 position, u8 committee) {
  if (index >= round->clients_len) return false;
  u8 seed[32];
  salted_seed(round->random_seed, "committee", 9, seed);
  u64 actual = shuffled_index(index, round->clients_len, seed);
  if (actual != position) return false;
  u8 expected = actual < round->tie_breaker_tasks ? COMMITTEE_TIE_BREAKER : COMMITTEE_TRAINER;
  return committee == expected;
}

/* types.ts MAX_CHECKPOINTERS: checkpointers a Cooldown elects at most. */
#define MAX_CHECKPOINTERS 16

/* checkpointer_selection.ts checkpointerCount: max(1, min(floor(n / 3), MAX_CHECKPOINTERS)). */
static u64 checkpointer_count(u64 clients) {
  if (clients == 0) return 0;
  u64 n = clients / 3;
  if (n > MAX_CHECKPOINTERS) n = MAX_CHECKPOINTERS;
  return n < 1 ? 1 : n;
}

/*
 * checkpointer_selection.ts isCheckpointer: client `index` of `clients` is elected iff its
 * position in the "checkpointer"-salted permutation is below the count.
 */
static bool is_checkpointer(u64 random_seed, u64 clients, u64 index) {
  if (index >= clients) return false;
  u8 seed[32];
  salted_seed(random_seed, "checkpointer", 12, seed);
  return shuffled_index(index, clients, seed) < checkpointer_count(clients);
}

/* witness_quorum.ts expectedWitnesses. */
static u64 expected_witnesses(const config_t *c, u64 clients_len) {
  if (c->witness_nodes > 0) return c->witness_nodes;
  return clients_len < MAX_WITNESSES ? clients_len : MAX_WITNESSES;
}

/* witness_quorum.ts witnessQuorum. */
static u64 witness_quorum(u64 expected) {
  if (expected == 1) return 1;
  if (expected == 2) return 2;
  if (expected == 3) return 2;
  u64 q = expected * 2 / 3;
  return q < 1 ? 1 : q;
}
