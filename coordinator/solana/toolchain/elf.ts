/**
 * A reader for the eBPF ELF64 relocatable objects clang writes (`clang -target bpfel -c`):
 * section headers, the symbol table and REL relocation sections. It checks every offset
 * and size against the file and throws {@linkcode ElfError} naming what is wrong, so the
 * linker never works from a truncated or foreign object.
 *
 * Only what the sBPF linker needs is decoded: little-endian ELF64, `e_machine` EM_BPF (247),
 * `e_type` ET_REL.
 *
 * @module
 */

/** `e_machine` of eBPF objects. */
export const EM_BPF = 247;
/** `e_type` of relocatable objects. */
export const ET_REL = 1;
/** `e_type` of shared objects (what the linker writes). */
export const ET_DYN = 3;

/** Section type: unused header. */
export const SHT_NULL = 0;
/** Section type: program bytes (code, read-only data). */
export const SHT_PROGBITS = 1;
/** Section type: the static symbol table. */
export const SHT_SYMTAB = 2;
/** Section type: a string table. */
export const SHT_STRTAB = 3;
/** Section type: zero-filled data with no bytes in the file (.bss). */
export const SHT_NOBITS = 8;
/** Section type: relocations without explicit addends (what BPF objects use). */
export const SHT_REL = 9;
/** Section type: the dynamic table. */
export const SHT_DYNAMIC = 6;
/** Section type: the dynamic symbol table. */
export const SHT_DYNSYM = 11;

/** Section flag: writable at run time. */
export const SHF_WRITE = 0x1;
/** Section flag: occupies memory when loaded. */
export const SHF_ALLOC = 0x2;
/** Section flag: holds instructions. */
export const SHF_EXECINSTR = 0x4;

/** Symbol type: unspecified (undefined syscalls). */
export const STT_NOTYPE = 0;
/** Symbol type: a data object. */
export const STT_OBJECT = 1;
/** Symbol type: a function. */
export const STT_FUNC = 2;
/** Symbol type: a section (relocations against a section's start). */
export const STT_SECTION = 3;
/** Symbol binding: local to the object. */
export const STB_LOCAL = 0;
/** Symbol binding: global. */
export const STB_GLOBAL = 1;
/** Section index of an undefined symbol. */
export const SHN_UNDEF = 0;
/** Lowest reserved section index (SHN_ABS, SHN_COMMON live above it). */
export const SHN_LORESERVE = 0xff00;

/** BPF relocation type: none (LLVM's ELFRelocs/BPF.def numbers all of these). */
export const R_BPF_NONE = 0;
/** `lddw` of an address: 64-bit immediate split across the instruction pair. */
export const R_BPF_64_64 = 1;
/** 64-bit absolute data word. */
export const R_BPF_64_ABS64 = 2;
/** 32-bit absolute data word. */
export const R_BPF_64_ABS32 = 3;
/** `call` of a symbol: the 32-bit immediate. */
export const R_BPF_64_32 = 10;

/** An object that is not a well-formed eBPF ELF64 relocatable file. */
export class ElfError extends Error {
  /** Byte offset in the file where the bad field starts (or -1 when not tied to one). */
  readonly offset: number;
  constructor(message: string, offset = -1) {
    super(offset >= 0 ? `${message} (at file offset ${offset})` : message);
    this.name = "ElfError";
    this.offset = offset;
  }
}

/** One section header plus its name and (for non-NOBITS sections) its bytes. */
export interface ElfSection {
  /** Position in the section header table. */
  index: number;
  name: string;
  type: number;
  flags: number;
  offset: number;
  size: number;
  link: number;
  info: number;
  align: number;
  entsize: number;
  /** The section's contents (empty for SHT_NOBITS). */
  data: Uint8Array;
}

/** One `.symtab` entry. */
export interface ElfSymbol {
  index: number;
  name: string;
  type: number;
  bind: number;
  /** Section index (SHN_UNDEF for undefined symbols). */
  shndx: number;
  value: number;
  size: number;
}

/** One REL entry, with the section it patches. */
export interface ElfRelocation {
  /** Index of the section being patched. */
  target: number;
  offset: number;
  type: number;
  symbol: number;
}

/** A parsed relocatable object. */
export interface ElfObject {
  sections: ElfSection[];
  symbols: ElfSymbol[];
  relocations: ElfRelocation[];
}

const decoder = new TextDecoder("utf-8", { fatal: false });

function cString(table: Uint8Array, at: number, what: string, fileOffset: number): string {
  if (at >= table.length && !(at === 0 && table.length === 0)) {
    throw new ElfError(`${what} name offset ${at} is outside its string table`, fileOffset);
  }
  let end = at;
  while (end < table.length && table[end] !== 0) end++;
  if (end >= table.length && table.length > 0) {
    throw new ElfError(`${what} name at ${at} is not NUL-terminated`, fileOffset);
  }
  return decoder.decode(table.subarray(at, end));
}

function safe(v: bigint, what: string, at: number): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new ElfError(`${what} is too large: ${v}`, at);
  return Number(v);
}

/**
 * Parses an eBPF ELF64 relocatable object. Throws {@linkcode ElfError} on a wrong magic,
 * class, byte order, machine or type, and on any header, section, symbol or relocation
 * that points outside the file.
 */
export function parseElfObject(bytes: Uint8Array): ElfObject {
  if (bytes.length < 64) {
    throw new ElfError(`file is ${bytes.length} bytes, shorter than an ELF64 header (64)`);
  }
  if (bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46) {
    throw new ElfError("not an ELF file (magic is not 7f 45 4c 46)", 0);
  }
  if (bytes[4] !== 2) throw new ElfError(`ELF class is ${bytes[4]}, expected 2 (64-bit)`, 4);
  if (bytes[5] !== 1) throw new ElfError(`ELF data is ${bytes[5]}, expected 1 (little-endian)`, 5);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const type = view.getUint16(16, true);
  if (type !== ET_REL) {
    throw new ElfError(`e_type is ${type}, expected ${ET_REL} (relocatable)`, 16);
  }
  const machine = view.getUint16(18, true);
  if (machine !== EM_BPF) {
    throw new ElfError(`e_machine is ${machine}, expected ${EM_BPF} (BPF)`, 18);
  }
  const shoff = safe(view.getBigUint64(40, true), "e_shoff", 40);
  const shentsize = view.getUint16(58, true);
  const shnum = view.getUint16(60, true);
  const shstrndx = view.getUint16(62, true);
  if (shentsize !== 64) throw new ElfError(`e_shentsize is ${shentsize}, expected 64`, 58);
  if (shoff + shnum * 64 > bytes.length) {
    throw new ElfError(
      `section headers (${shnum} at ${shoff}) run past the end of the file (${bytes.length} bytes)`,
      40,
    );
  }
  if (shstrndx >= shnum) {
    throw new ElfError(`e_shstrndx ${shstrndx} is not a section (${shnum} sections)`, 62);
  }

  const raw = [];
  for (let i = 0; i < shnum; i++) {
    const at = shoff + i * 64;
    const h = {
      index: i,
      nameOffset: view.getUint32(at, true),
      type: view.getUint32(at + 4, true),
      flags: safe(view.getBigUint64(at + 8, true), `section ${i} sh_flags`, at + 8),
      offset: safe(view.getBigUint64(at + 24, true), `section ${i} sh_offset`, at + 24),
      size: safe(view.getBigUint64(at + 32, true), `section ${i} sh_size`, at + 32),
      link: view.getUint32(at + 40, true),
      info: view.getUint32(at + 44, true),
      align: safe(view.getBigUint64(at + 48, true), `section ${i} sh_addralign`, at + 48),
      entsize: safe(view.getBigUint64(at + 56, true), `section ${i} sh_entsize`, at + 56),
      headerAt: at,
    };
    if (h.type !== SHT_NOBITS && h.type !== SHT_NULL && h.offset + h.size > bytes.length) {
      throw new ElfError(
        `section ${i} (${h.size} bytes at ${h.offset}) runs past the end of the file (${bytes.length} bytes)`,
        at + 24,
      );
    }
    raw.push(h);
  }
  const shstr = raw[shstrndx];
  const shstrData = bytes.subarray(shstr.offset, shstr.offset + shstr.size);
  const sections: ElfSection[] = raw.map((h) => ({
    index: h.index,
    name: h.type === SHT_NULL
      ? ""
      : cString(shstrData, h.nameOffset, `section ${h.index}`, h.headerAt),
    type: h.type,
    flags: h.flags,
    offset: h.offset,
    size: h.size,
    link: h.link,
    info: h.info,
    align: h.align,
    entsize: h.entsize,
    data: h.type === SHT_NOBITS || h.type === SHT_NULL
      ? new Uint8Array(0)
      : bytes.subarray(h.offset, h.offset + h.size),
  }));

  const symtabs = sections.filter((s) => s.type === SHT_SYMTAB);
  if (symtabs.length !== 1) {
    throw new ElfError(`expected one .symtab section, found ${symtabs.length}`);
  }
  const symtab = symtabs[0];
  if (symtab.entsize !== 24 || symtab.size % 24 !== 0) {
    throw new ElfError(
      `.symtab entry size is ${symtab.entsize} (size ${symtab.size}), expected 24`,
      symtab.offset,
    );
  }
  const strtab = sections[symtab.link];
  if (strtab === undefined || strtab.type !== SHT_STRTAB) {
    throw new ElfError(`.symtab links to section ${symtab.link}, which is not a string table`);
  }
  const symbols: ElfSymbol[] = [];
  for (let i = 0; i < symtab.size / 24; i++) {
    const at = symtab.offset + i * 24;
    const info = bytes[at + 4];
    const shndx = view.getUint16(at + 6, true);
    if (shndx !== SHN_UNDEF && shndx < SHN_LORESERVE && shndx >= sections.length) {
      throw new ElfError(
        `symbol ${i} names section ${shndx}, but there are ${sections.length}`,
        at + 6,
      );
    }
    symbols.push({
      index: i,
      name: cString(strtab.data, view.getUint32(at, true), `symbol ${i}`, at),
      type: info & 0xf,
      bind: info >> 4,
      shndx,
      value: safe(view.getBigUint64(at + 8, true), `symbol ${i} st_value`, at + 8),
      size: safe(view.getBigUint64(at + 16, true), `symbol ${i} st_size`, at + 16),
    });
  }

  const relocations: ElfRelocation[] = [];
  for (const s of sections) {
    if (s.type === 4) throw new ElfError(`section ${s.name} is RELA; BPF objects use REL`);
    if (s.type !== SHT_REL) continue;
    if (s.entsize !== 16 || s.size % 16 !== 0) {
      throw new ElfError(`${s.name} entry size is ${s.entsize}, expected 16`, s.offset);
    }
    const target = sections[s.info];
    if (target === undefined || s.info === 0) {
      throw new ElfError(`${s.name} patches section ${s.info}, which does not exist`);
    }
    for (let i = 0; i < s.size / 16; i++) {
      const at = s.offset + i * 16;
      const offset = safe(view.getBigUint64(at, true), `${s.name}[${i}] r_offset`, at);
      const info = view.getBigUint64(at + 8, true);
      const symbol = Number(info >> 32n);
      const type = Number(info & 0xffff_ffffn);
      if (symbol >= symbols.length) {
        throw new ElfError(
          `${s.name}[${i}] names symbol ${symbol}, but there are ${symbols.length}`,
          at + 8,
        );
      }
      if (offset + 8 > target.size) {
        throw new ElfError(
          `${s.name}[${i}] patches offset ${offset}, outside ${target.name} (${target.size} bytes)`,
          at,
        );
      }
      relocations.push({ target: s.info, offset, type, symbol });
    }
  }
  return { sections, symbols, relocations };
}
