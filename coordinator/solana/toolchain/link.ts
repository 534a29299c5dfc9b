/**
 * The sBPF linker: turns the eBPF relocatable object clang writes into an SBPF v0 shared
 * object that Solana's loader accepts (reference/solana.md "Link").
 *
 * Output layout (every section's `sh_addr == sh_offset`, so a virtual address is its file
 * offset; the loader maps the file at the program region base `0x1_0000_0000`):
 *
 * ```
 * ELF header | program headers | .text | .rodata | .dynamic | .dynsym | .dynstr | .rel.dyn
 *            | .shstrtab | section headers
 * ```
 *
 * Relocations:
 * - `lddw` of a `.rodata*` (or `.text`) address (`R_BPF_64_64`): resolved here to the absolute
 *   address `0x1_0000_0000 + vaddr + addend`, written into both immediate halves.
 * - `call` of a function defined in `.text` (`R_BPF_64_32`): resolved here to a pc-relative
 *   immediate `target - (pc + 1)`, which the v0 loader registers as a local function.
 * - `call` of an undefined symbol: a syscall. It stays `call -1` with an `R_BPF_64_32`
 *   dynamic relocation against a named `.dynsym` entry; the loader patches in the
 *   murmur3-32 hash of the name. `memcpy`, `memset`, `memmove` and `memcmp` become
 *   `sol_memcpy_`, `sol_memset_`, `sol_memmove_` and `sol_memcmp_`.
 *
 * Writable globals (`.data`, `.bss` with content), other relocation kinds, relocations in
 * data sections and instructions whose meaning differs in sBPF ({@linkcode lintSbpfV0})
 * are rejected with {@linkcode LinkError} / `SbpfLintError`.
 *
 * @module
 */

import {
  type ElfObject,
  type ElfSection,
  type ElfSymbol,
  EM_BPF,
  ET_DYN,
  parseElfObject,
  R_BPF_64_32,
  R_BPF_64_64,
  R_BPF_NONE,
  SHF_ALLOC,
  SHF_EXECINSTR,
  SHF_WRITE,
  SHN_UNDEF,
  SHT_DYNAMIC,
  SHT_DYNSYM,
  SHT_NOBITS,
  SHT_PROGBITS,
  SHT_REL,
  SHT_STRTAB,
  STB_GLOBAL,
  STT_FUNC,
  STT_NOTYPE,
  STT_SECTION,
} from "./elf.ts";
import { lintSbpfV0 } from "./lint.ts";

/** Where the loader maps the program's bytes (SBPF v0 `MM_PROGRAM_START`). */
export const PROGRAM_REGION_BASE = 0x1_0000_0000n;

/** The C library names the linker maps onto Solana syscalls. */
export const LIBC_SYSCALL_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  memcpy: "sol_memcpy_",
  memmove: "sol_memmove_",
  memset: "sol_memset_",
  memcmp: "sol_memcmp_",
});

/** The object cannot be linked into an SBPF v0 program. */
export class LinkError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LinkError";
  }
}

/** Options of {@linkcode linkSbpfV0}. */
export interface LinkOptions {
  /** The entry function's symbol (default `entrypoint`). */
  entrySymbol?: string;
}

/** A linked program and what went into it. */
export interface LinkedProgram {
  /** The shared object to deploy. */
  bytes: Uint8Array;
  /** Virtual address (== file offset) of `.text`. */
  textAddress: number;
  /** Size of `.text` in bytes. */
  textSize: number;
  /** Virtual address of `.rodata` (equal to the end of `.text` when there is none). */
  rodataAddress: number;
  /** Size of `.rodata` in bytes. */
  rodataSize: number;
  /** Entry instruction index within `.text`. */
  entryPc: number;
  /** Syscalls the program calls, in `.dynsym` order. */
  syscalls: string[];
  /** Number of dynamic relocations written. */
  dynamicRelocations: number;
}

const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const PF_X = 1;
const PF_W = 2;
const PF_R = 4;
const DT_NULL = 0;
const DT_STRTAB = 5;
const DT_SYMTAB = 6;
const DT_STRSZ = 10;
const DT_SYMENT = 11;
const DT_REL = 17;
const DT_RELSZ = 18;
const DT_RELENT = 19;
const DT_TEXTREL = 22;
const DT_FLAGS = 30;
const DF_TEXTREL = 0x4;

const OP_LDDW = 0x18;
const OP_CALL = 0x85;

const align8 = (n: number): number => (n + 7) & ~7;

class StringTable {
  readonly #bytes: number[] = [0];
  readonly #index = new Map<string, number>();
  add(s: string): number {
    const hit = this.#index.get(s);
    if (hit !== undefined) return hit;
    const at = this.#bytes.length;
    for (const b of new TextEncoder().encode(s)) this.#bytes.push(b);
    this.#bytes.push(0);
    this.#index.set(s, at);
    return at;
  }
  bytes(): Uint8Array {
    return Uint8Array.from(this.#bytes);
  }
}

function symbolLabel(sym: ElfSymbol, sections: ElfSection[]): string {
  return sym.type === STT_SECTION ? `section ${sections[sym.shndx]?.name}` : `"${sym.name}"`;
}

function classify(obj: ElfObject): { text: ElfSection; rodata: ElfSection[] } {
  let text: ElfSection | undefined;
  const rodata: ElfSection[] = [];
  for (const s of obj.sections) {
    if ((s.flags & SHF_ALLOC) === 0) continue;
    if ((s.flags & SHF_EXECINSTR) !== 0) {
      if (s.name !== ".text") {
        throw new LinkError(
          `executable section ${s.name}: only one executable section (.text) is supported; ` +
            "compile without -ffunction-sections",
        );
      }
      text = s;
    } else if ((s.flags & SHF_WRITE) !== 0 || s.type === SHT_NOBITS) {
      if (s.size === 0) continue;
      const names = obj.symbols.filter((y) => y.shndx === s.index && y.type !== STT_SECTION)
        .map((y) => y.name).join(", ");
      throw new LinkError(
        `writable section ${s.name} (${s.size} bytes${names ? `: ${names}` : ""}): Solana ` +
          "programs cannot have writable globals; make them const or pass them as arguments",
      );
    } else if (s.name.startsWith(".rodata") && s.type === SHT_PROGBITS) {
      rodata.push(s);
    } else {
      throw new LinkError(`allocated section ${s.name} (type ${s.type}) is not supported`);
    }
  }
  if (text === undefined || text.size === 0) throw new LinkError("the object has no .text");
  return { text, rodata };
}

/**
 * Links an eBPF relocatable object (bytes of a `.o`) into an SBPF v0 shared object.
 * Throws `ElfError` for a malformed object, {@linkcode LinkError} for one that cannot be
 * linked (no entry symbol, writable data, unsupported relocation) and `SbpfLintError` for
 * instructions sBPF v0 runs differently.
 *
 * @example
 * ```ts
 * import { linkSbpfV0 } from "./link.ts";
 * // testdata/tiny.o: clang-19 -target bpfel -mcpu=v2 -O2 -c testdata/tiny.c
 * const program = linkSbpfV0(await Deno.readFile(new URL("./testdata/tiny.o", import.meta.url)));
 * if (program.textSize === 0 || program.bytes.length <= program.textSize) throw new Error("empty");
 * ```
 */
export function linkSbpfV0(object: Uint8Array, opts: LinkOptions = {}): LinkedProgram {
  const entryName = opts.entrySymbol ?? "entrypoint";
  const obj = parseElfObject(object);
  const { text, rodata } = classify(obj);

  // Layout: header, 4 program headers, then sections in file order.
  const phnum = 4;
  const textAddress = align8(64 + phnum * 56);
  const textSize = text.size;
  const rodataAddress = align8(textAddress + textSize);
  const rodataPlace = new Map<number, number>();
  let rodataSize = 0;
  for (const s of rodata) {
    const a = Math.max(1, s.align);
    rodataSize = Math.ceil(rodataSize / a) * a;
    rodataPlace.set(s.index, rodataAddress + rodataSize);
    rodataSize += s.size;
  }

  const code = text.data.slice();
  const codeView = new DataView(code.buffer);
  const dynstr = new StringTable();
  const dynsyms: { name: number; info: number; shndx: number; value: number; size: number }[] = [
    { name: 0, info: 0, shndx: 0, value: 0, size: 0 },
  ];
  const syscallIndex = new Map<string, number>();
  const syscalls: string[] = [];
  const dynRels: { offset: number; symbol: number }[] = [];

  const entry = obj.symbols.find((s) => s.name === entryName && s.shndx === text.index);
  if (entry === undefined || entry.type !== STT_FUNC || entry.bind !== STB_GLOBAL) {
    throw new LinkError(`no global function "${entryName}" defined in .text`);
  }
  if (entry.value % 8 !== 0 || entry.value >= textSize) {
    throw new LinkError(`"${entryName}" is at .text offset ${entry.value}, not an instruction`);
  }
  // Section header indices of the output: 1 .text, then .rodata if any.
  const outText = 1;
  dynsyms.push({
    name: dynstr.add(entryName),
    info: (STB_GLOBAL << 4) | STT_FUNC,
    shndx: outText,
    value: textAddress + entry.value,
    size: entry.size,
  });

  for (const rel of obj.relocations) {
    const target = obj.sections[rel.target];
    if ((target.flags & SHF_ALLOC) === 0) continue; // debug info
    const sym = obj.symbols[rel.symbol];
    if (rel.target !== text.index) {
      throw new LinkError(
        `relocation in ${target.name} at offset ${rel.offset} (against ${
          symbolLabel(sym, obj.sections)
        }): ` +
          "only .text may be relocated (no pointers in data)",
      );
    }
    if (rel.type === R_BPF_NONE) continue;
    if (rel.offset % 8 !== 0) {
      throw new LinkError(`relocation at .text offset ${rel.offset} is not on an instruction`);
    }
    const op = code[rel.offset];
    const pc = rel.offset / 8;
    if (rel.type === R_BPF_64_64) {
      if (op !== OP_LDDW) {
        throw new LinkError(
          `R_BPF_64_64 at instruction ${pc} patches opcode 0x${
            op.toString(16)
          }, expected lddw (0x18)`,
        );
      }
      let base: number;
      if (sym.shndx === text.index) base = textAddress;
      else if (rodataPlace.has(sym.shndx)) base = rodataPlace.get(sym.shndx)!;
      else {
        throw new LinkError(
          `lddw at instruction ${pc} takes the address of ${
            symbolLabel(sym, obj.sections)
          }, which is ` +
            (sym.shndx === SHN_UNDEF
              ? "undefined"
              : `in unsupported section ${obj.sections[sym.shndx]?.name}`),
        );
      }
      const addend = codeView.getUint32(rel.offset + 4, true);
      const address = PROGRAM_REGION_BASE + BigInt(base + sym.value + addend);
      codeView.setUint32(rel.offset + 4, Number(address & 0xffff_ffffn), true);
      codeView.setUint32(rel.offset + 12, Number(address >> 32n), true);
    } else if (rel.type === R_BPF_64_32) {
      if (op !== OP_CALL) {
        throw new LinkError(
          `R_BPF_64_32 at instruction ${pc} patches opcode 0x${
            op.toString(16)
          }, expected call (0x85)`,
        );
      }
      if (sym.shndx === SHN_UNDEF) {
        const name = LIBC_SYSCALL_ALIASES[sym.name] ?? sym.name;
        if (name === "") throw new LinkError(`call at instruction ${pc} names no symbol`);
        let index = syscallIndex.get(name);
        if (index === undefined) {
          index = dynsyms.length;
          dynsyms.push({
            name: dynstr.add(name),
            info: (STB_GLOBAL << 4) | STT_NOTYPE,
            shndx: 0,
            value: 0,
            size: 0,
          });
          syscallIndex.set(name, index);
          syscalls.push(name);
        }
        codeView.setInt32(rel.offset + 4, -1, true);
        // The loader reads the src register to tell syscalls (0) from local calls (1).
        code[rel.offset + 1] &= 0x0f;
        dynRels.push({ offset: textAddress + rel.offset, symbol: index });
      } else if (sym.shndx === text.index && sym.type === STT_FUNC) {
        if (sym.value % 8 !== 0) {
          throw new LinkError(`call target "${sym.name}" is not on an instruction`);
        }
        codeView.setInt32(rel.offset + 4, sym.value / 8 - (pc + 1), true);
        code[rel.offset + 1] = (code[rel.offset + 1] & 0x0f) | 0x10;
      } else {
        throw new LinkError(
          `call at instruction ${pc} targets ${
            symbolLabel(sym, obj.sections)
          }, which is not a function in .text`,
        );
      }
    } else {
      throw new LinkError(
        `relocation type ${rel.type} at instruction ${pc} (against ${
          symbolLabel(sym, obj.sections)
        }) is not supported`,
      );
    }
  }

  const functions = obj.symbols.filter((s) => s.shndx === text.index && s.type === STT_FUNC)
    .sort((a, b) => a.value - b.value);
  lintSbpfV0(code, (pc) => {
    let name: string | undefined;
    for (const f of functions) if (f.value <= pc * 8) name = f.name;
    return name;
  });

  const dynstrBytes = dynstr.bytes();
  const dynamicAddress = align8(rodataAddress + rodataSize);
  const dynamicEntries: [number, number][] = [];
  const dynamicBytes = 16 * 10;
  const dynsymAddress = dynamicAddress + dynamicBytes;
  const dynsymBytes = dynsyms.length * 24;
  const dynstrAddress = dynsymAddress + dynsymBytes;
  const relAddress = align8(dynstrAddress + dynstrBytes.length);
  const relBytes = dynRels.length * 16;
  dynamicEntries.push(
    [DT_FLAGS, DF_TEXTREL],
    [DT_REL, relAddress],
    [DT_RELSZ, relBytes],
    [DT_RELENT, 16],
    [DT_SYMTAB, dynsymAddress],
    [DT_SYMENT, 24],
    [DT_STRTAB, dynstrAddress],
    [DT_STRSZ, dynstrBytes.length],
    [DT_TEXTREL, 0],
    [DT_NULL, 0],
  );

  const shstr = new StringTable();
  type OutSection = {
    name: number;
    type: number;
    flags: number;
    addr: number;
    size: number;
    link: number;
    info: number;
    align: number;
    entsize: number;
  };
  const sections: OutSection[] = [
    { name: 0, type: 0, flags: 0, addr: 0, size: 0, link: 0, info: 0, align: 0, entsize: 0 },
    {
      name: shstr.add(".text"),
      type: SHT_PROGBITS,
      flags: SHF_ALLOC | SHF_EXECINSTR,
      addr: textAddress,
      size: textSize,
      link: 0,
      info: 0,
      align: 8,
      entsize: 0,
    },
  ];
  if (rodataSize > 0) {
    sections.push({
      name: shstr.add(".rodata"),
      type: SHT_PROGBITS,
      flags: SHF_ALLOC,
      addr: rodataAddress,
      size: rodataSize,
      link: 0,
      info: 0,
      align: 8,
      entsize: 0,
    });
  }
  const dynsymIndex = sections.length + 1;
  const dynstrIndex = sections.length + 2;
  sections.push(
    {
      name: shstr.add(".dynamic"),
      type: SHT_DYNAMIC,
      flags: SHF_ALLOC | SHF_WRITE,
      addr: dynamicAddress,
      size: dynamicBytes,
      link: dynstrIndex,
      info: 0,
      align: 8,
      entsize: 16,
    },
    {
      name: shstr.add(".dynsym"),
      type: SHT_DYNSYM,
      flags: SHF_ALLOC,
      addr: dynsymAddress,
      size: dynsymBytes,
      link: dynstrIndex,
      info: 1,
      align: 8,
      entsize: 24,
    },
    {
      name: shstr.add(".dynstr"),
      type: SHT_STRTAB,
      flags: SHF_ALLOC,
      addr: dynstrAddress,
      size: dynstrBytes.length,
      link: 0,
      info: 0,
      align: 1,
      entsize: 0,
    },
    {
      name: shstr.add(".rel.dyn"),
      type: SHT_REL,
      flags: SHF_ALLOC,
      addr: relAddress,
      size: relBytes,
      link: dynsymIndex,
      info: 0,
      align: 8,
      entsize: 16,
    },
  );
  const shstrIndex = sections.length;
  const shstrName = shstr.add(".shstrtab");
  const shstrBytes = shstr.bytes();
  const shstrAddress = relAddress + relBytes;
  sections.push({
    name: shstrName,
    type: SHT_STRTAB,
    flags: 0,
    addr: 0,
    size: shstrBytes.length,
    link: 0,
    info: 0,
    align: 1,
    entsize: 0,
  });
  const shoff = align8(shstrAddress + shstrBytes.length);
  const total = shoff + sections.length * 64;

  const out = new Uint8Array(total);
  const v = new DataView(out.buffer);
  const u64 = (at: number, x: number) => v.setBigUint64(at, BigInt(x), true);
  // ELF header.
  out.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0], 0);
  v.setUint16(16, ET_DYN, true);
  v.setUint16(18, EM_BPF, true);
  v.setUint32(20, 1, true);
  u64(24, textAddress + entry.value);
  u64(32, 64);
  u64(40, shoff);
  v.setUint32(48, 0, true); // e_flags: SBPF v0
  v.setUint16(52, 64, true);
  v.setUint16(54, 56, true);
  v.setUint16(56, phnum, true);
  v.setUint16(58, 64, true);
  v.setUint16(60, sections.length, true);
  v.setUint16(62, shstrIndex, true);
  // Program headers: text (R X), rodata (R), dynamic data (R W), PT_DYNAMIC.
  const dynEnd = relAddress + relBytes;
  const phdrs: [number, number, number, number][] = [
    [PT_LOAD, PF_R | PF_X, textAddress, textSize],
    [PT_LOAD, PF_R, rodataAddress, rodataSize],
    [PT_LOAD, PF_R | PF_W, dynamicAddress, dynEnd - dynamicAddress],
    [PT_DYNAMIC, PF_R | PF_W, dynamicAddress, dynamicBytes],
  ];
  phdrs.forEach(([type, flags, addr, size], i) => {
    const at = 64 + i * 56;
    v.setUint32(at, type, true);
    v.setUint32(at + 4, flags, true);
    u64(at + 8, addr);
    u64(at + 16, addr);
    u64(at + 24, addr);
    u64(at + 32, size);
    u64(at + 40, size);
    u64(at + 48, type === PT_LOAD ? 8 : 8);
  });
  out.set(code, textAddress);
  for (const s of rodata) out.set(s.data, rodataPlace.get(s.index)!);
  dynamicEntries.forEach(([tag, val], i) => {
    u64(dynamicAddress + i * 16, tag);
    u64(dynamicAddress + i * 16 + 8, val);
  });
  dynsyms.forEach((s, i) => {
    const at = dynsymAddress + i * 24;
    v.setUint32(at, s.name, true);
    out[at + 4] = s.info;
    v.setUint16(at + 6, s.shndx, true);
    u64(at + 8, s.value);
    u64(at + 16, s.size);
  });
  out.set(dynstrBytes, dynstrAddress);
  dynRels.forEach((r, i) => {
    u64(relAddress + i * 16, r.offset);
    v.setBigUint64(relAddress + i * 16 + 8, (BigInt(r.symbol) << 32n) | BigInt(R_BPF_64_32), true);
  });
  out.set(shstrBytes, shstrAddress);
  sections.forEach((s, i) => {
    const at = shoff + i * 64;
    v.setUint32(at, s.name, true);
    v.setUint32(at + 4, s.type, true);
    u64(at + 8, s.flags);
    u64(at + 16, s.addr);
    u64(at + 24, i === shstrIndex ? shstrAddress : s.addr);
    u64(at + 32, s.size);
    v.setUint32(at + 40, s.link, true);
    v.setUint32(at + 44, s.info, true);
    u64(at + 48, s.align);
    u64(at + 56, s.entsize);
  });

  return {
    bytes: out,
    textAddress,
    textSize,
    rodataAddress,
    rodataSize,
    entryPc: entry.value / 8,
    syscalls,
    dynamicRelocations: dynRels.length,
  };
}
