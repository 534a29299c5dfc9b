/* Linker golden fixture: rodata, a syscall, a global call, a static call, memcpy.
 * tiny.o is this file compiled by clang-19 -target bpfel -mcpu=v2 -O2 -ffreestanding
 * -fno-builtin -mllvm -bpf-stack-size=4096 -c (checked in so the golden bytes do not
 * depend on the installed clang). */
typedef unsigned long long u64;
typedef unsigned char u8;
extern void sol_log_(const char *message, u64 len);
extern void *memcpy(void *dst, const void *src, u64 n);
static const char greeting[] = "tiny program";
static const u64 weights[4] = {3, 5, 7, 11};

__attribute__((noinline)) u64 weighted(const u8 *data, u64 n) {
  u64 sum = 0;
  for (u64 i = 0; i < n; i++) sum += data[i] * weights[i & 3];
  return sum;
}

__attribute__((noinline)) static u64 plus_one(u64 x) { return x + 1; }

u64 entrypoint(const u8 *input) {
  sol_log_(greeting, sizeof(greeting) - 1);
  u8 copy[64];
  u64 n = *(const u64 *)(input + 8);
  if (n > 64) n = 64;
  memcpy(copy, input + 16, n);
  return plus_one(weighted(copy, n));
}
