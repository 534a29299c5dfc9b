/**
 * What builds the Solana programs (the coordinator, the mining pool and the treasurer): clang-19
 * compiles the C to eBPF ELF objects (`-target bpfel -mcpu=v2`), the project's own linker turns
 * them into a Solana SBPF v0 shared object, and the sBPF lint rejects instructions the Solana VM
 * would run differently.
 * `deno task build-program` runs build.ts.
 *
 * @module
 */

export { ElfError, parseElfObject } from "./elf.ts";
export type { ElfObject, ElfRelocation, ElfSection, ElfSymbol } from "./elf.ts";
export { lintSbpfV0, SbpfLintError } from "./lint.ts";
export {
  LIBC_SYSCALL_ALIASES,
  type LinkedProgram,
  LinkError,
  type LinkOptions,
  linkSbpfV0,
  PROGRAM_REGION_BASE,
} from "./link.ts";
export { buildProgram, buildProgramOnce, PROGRAM_OUTPUT, ProgramBuildError } from "./build.ts";
export { PROGRAM_SOURCE, PROGRAM_SOURCES_DIR, sourcesHash } from "./build.ts";
export { buildPoolOnce, POOL_OUTPUT, POOL_SOURCE, PROGRAMS } from "./build.ts";
export { buildTreasurerOnce, TREASURER_OUTPUT, TREASURER_SOURCE } from "./build.ts";
