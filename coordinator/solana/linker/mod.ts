/**
 * The project's sBPF linker: eBPF ELF relocatable objects (clang-19 `-target bpfel
 * -mcpu=v2`) in, Solana SBPF v0 shared objects out.
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
