import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  appendTransactionMessageInstruction,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressEncoder,
  getProgramDerivedAddress,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { FailedTransactionMetadata, LiteSVM } from "litesvm";
import { ElfError, LinkError, linkSbpfV0, PROGRAM_REGION_BASE, SbpfLintError } from "./mod.ts";

const TINY = await Deno.readFile(new URL("./testdata/tiny.o", import.meta.url));

/** Compiles C source with clang-19 for BPF (extra flags appended) and returns the object. */
async function compile(source: string, extra: string[] = []): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/x.c`, source);
    const out = await new Deno.Command("clang-19", {
      args: [
        "-target",
        "bpfel",
        "-mcpu=v2",
        "-O2",
        "-ffreestanding",
        "-fno-builtin",
        ...extra,
        "-c",
        `${dir}/x.c`,
        "-o",
        `${dir}/x.o`,
      ],
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return await Deno.readFile(`${dir}/x.o`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

interface Section {
  name: string;
  type: number;
  addr: number;
  offset: number;
  size: number;
}

function sections(so: Uint8Array): Section[] {
  const v = new DataView(so.buffer, so.byteOffset);
  const shoff = Number(v.getBigUint64(40, true));
  const shnum = v.getUint16(60, true);
  const shstrndx = v.getUint16(62, true);
  const raw = Array.from({ length: shnum }, (_, i) => {
    const at = shoff + i * 64;
    return {
      nameOff: v.getUint32(at, true),
      type: v.getUint32(at + 4, true),
      addr: Number(v.getBigUint64(at + 16, true)),
      offset: Number(v.getBigUint64(at + 24, true)),
      size: Number(v.getBigUint64(at + 32, true)),
    };
  });
  const strtab = raw[shstrndx];
  return raw.map((s) => {
    let end = strtab.offset + s.nameOff;
    while (so[end] !== 0) end++;
    const name = new TextDecoder().decode(so.subarray(strtab.offset + s.nameOff, end));
    return { name, type: s.type, addr: s.addr, offset: s.offset, size: s.size };
  });
}

Deno.test("linker: the golden object links to a fixed SBPF v0 layout", () => {
  const p = linkSbpfV0(TINY);
  const v = new DataView(p.bytes.buffer);
  assert.deepEqual([...p.bytes.subarray(0, 8)], [0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]);
  assert.equal(v.getUint16(16, true), 3, "ET_DYN");
  assert.equal(v.getUint16(18, true), 247, "EM_BPF");
  assert.equal(v.getUint32(48, true), 0, "e_flags 0 = SBPF v0");
  assert.equal(Number(v.getBigUint64(24, true)), p.textAddress + p.entryPc * 8, "e_entry");
  const secs = sections(p.bytes);
  assert.deepEqual(
    secs.map((s) => s.name),
    ["", ".text", ".rodata", ".dynamic", ".dynsym", ".dynstr", ".rel.dyn", ".shstrtab"],
  );
  for (const s of secs.slice(1, -1)) {
    assert.equal(s.addr, s.offset, `${s.name}: sh_addr == sh_offset`);
  }
  assert.deepEqual(p.syscalls, ["sol_log_", "sol_memcpy_"], "memcpy is mapped to sol_memcpy_");
  assert.equal(p.dynamicRelocations, 2);
  // Every dynamic relocation is R_BPF_64_32 on a `call -1` whose src register is 0 (syscall).
  const rel = secs.find((s) => s.name === ".rel.dyn")!;
  for (let at = rel.offset; at < rel.offset + rel.size; at += 16) {
    const target = Number(v.getBigUint64(at, true));
    assert.equal(Number(v.getBigUint64(at + 8, true) & 0xffff_ffffn), 10);
    assert.equal(p.bytes[target], 0x85);
    assert.equal(p.bytes[target + 1] >> 4, 0);
    assert.equal(v.getInt32(target + 4, true), -1);
  }
  // Every lddw holds an absolute address inside .rodata of the program region.
  const text = p.bytes.subarray(p.textAddress, p.textAddress + p.textSize);
  const tv = new DataView(text.buffer, text.byteOffset);
  let lddw = 0;
  for (let pc = 0; pc < text.length / 8; pc++) {
    if (text[pc * 8] !== 0x18) continue;
    const addr = BigInt(tv.getUint32(pc * 8 + 4, true)) |
      (BigInt(tv.getUint32(pc * 8 + 12, true)) << 32n);
    assert.ok(addr >= PROGRAM_REGION_BASE + BigInt(p.rodataAddress));
    assert.ok(addr < PROGRAM_REGION_BASE + BigInt(p.rodataAddress + p.rodataSize));
    lddw++;
    pc++;
  }
  assert.equal(lddw, 2);
  // Local calls are pc-relative with src = 1.
  const calls = [];
  for (let pc = 0; pc < text.length / 8; pc++) {
    if (text[pc * 8] === 0x85 && text[pc * 8 + 1] >> 4 === 1) {
      calls.push(tv.getInt32(pc * 8 + 4, true));
    }
  }
  assert.equal(calls.length, 2);
  const digest = createHash("sha256").update(p.bytes).digest("hex");
  assert.equal(digest, GOLDEN_SHA256, "linked bytes changed: check the layout on purpose");
});

const GOLDEN_SHA256 = "568e498fc16aef7d79d8ba05daf1c6a2ddac1ff7126b983e44bc33e702e6d445";

Deno.test("linker: output is deterministic", () => {
  assert.deepEqual(linkSbpfV0(TINY).bytes, linkSbpfV0(TINY).bytes);
});

Deno.test("linker: the golden program runs in the SVM (syscalls, rodata, calls)", async () => {
  const svm = new LiteSVM();
  const program = await generateKeyPairSigner();
  svm.addProgram(program.address, linkSbpfV0(TINY).bytes);
  const payer = await generateKeyPairSigner();
  svm.airdrop(payer.address, lamports(1_000_000_000n));
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: svm.latestBlockhash(), lastValidBlockHeight: 100n },
        m,
      ),
    (m) =>
      appendTransactionMessageInstruction({
        programAddress: program.address,
        data: Uint8Array.of(1, 2, 3, 4, 5),
      }, m),
  );
  const result = svm.sendTransaction(await signTransactionMessageWithSigners(message));
  assert.ok(result instanceof FailedTransactionMetadata, "the program returns its sum as an error");
  // 1*3 + 2*5 + 3*7 + 4*11 + 5*3 = 93, plus one.
  assert.match(result.toString(), /Custom\(94\)/);
  assert.ok(result.meta().logs().includes("Program log: tiny program"));
});

Deno.test("linker: rejects files that are not eBPF relocatable objects", () => {
  assert.throws(
    () => linkSbpfV0(new Uint8Array(10)),
    (e) => e instanceof ElfError && /shorter/.test(e.message),
  );
  const notElf = TINY.slice();
  notElf[0] = 0;
  assert.throws(() => linkSbpfV0(notElf), (e) => e instanceof ElfError && /magic/.test(e.message));
  const x86 = TINY.slice();
  x86[18] = 62;
  assert.throws(
    () => linkSbpfV0(x86),
    (e) => e instanceof ElfError && /e_machine is 62, expected 247/.test(e.message),
  );
  const truncated = TINY.slice(0, TINY.length - 100);
  assert.throws(
    () => linkSbpfV0(truncated),
    (e) => e instanceof ElfError && /past the end/.test(e.message),
  );
  const big = TINY.slice();
  new DataView(big.buffer).setUint16(16, 3, true);
  assert.throws(
    () => linkSbpfV0(big),
    (e) => e instanceof ElfError && /e_type is 3/.test(e.message),
  );
});

Deno.test("linker: rejects writable globals, naming the section and symbol", async () => {
  const obj = await compile(
    "unsigned long long counter = 5;\nunsigned long long entrypoint(void) { return ++counter; }",
  );
  assert.throws(
    () => linkSbpfV0(obj),
    (e) => e instanceof LinkError && /writable section \.data .*counter/.test(e.message),
  );
});

Deno.test("linker: rejects a missing entrypoint and pointers in data", async () => {
  const noEntry = await compile("unsigned long long start(void) { return 1; }");
  assert.throws(
    () => linkSbpfV0(noEntry),
    (e) => e instanceof LinkError && /"entrypoint"/.test(e.message),
  );
  const table = await compile(
    'static const char *const names[] = {"a", "b"};\n' +
      "unsigned long long entrypoint(const unsigned char *in) { return names[in[0] & 1][0]; }",
  );
  assert.throws(
    () => linkSbpfV0(table),
    (e) => e instanceof LinkError && /only \.text may be relocated/.test(e.message),
  );
  const split = await compile(
    "__attribute__((noinline)) unsigned long long f(unsigned long long x) { return x * 3; }\n" +
      "unsigned long long entrypoint(unsigned long long x) { return f(x); }",
    ["-ffunction-sections"],
  );
  assert.throws(
    () => linkSbpfV0(split),
    (e) => e instanceof LinkError && /-ffunction-sections/.test(e.message),
  );
});

Deno.test("linker: the lint rejects eBPF v3 code (ALU32, JMP32)", async () => {
  const obj = await compile(
    "unsigned int entrypoint(const unsigned int *in) {\n" +
      "  unsigned int a = in[0] + in[1];\n  if (a < in[2]) return a * 3;\n  return a - 7;\n}",
    ["-mcpu=v3"],
  );
  assert.throws(
    () => linkSbpfV0(obj),
    (e) =>
      e instanceof SbpfLintError && /entrypoint/.test(e.message) &&
      /(sign-extends|JMP32)/.test(e.message),
  );
});

Deno.test("linker: the CPI header's PDA syscalls resolve by name and agree with kit", async () => {
  // Derives the PDA of ["psyche"] both ways and returns Custom(1000 + bump) when both give the
  // address the instruction data names (computed by @solana/kit), Custom(1) otherwise.
  const source = `
#include "sol_cpi.h"
u64 entrypoint(const u8 *input) {
  SolAccountInfo infos[1];
  sol_parsed_t in;
  sol_parse_accounts(input, infos, 1, &in);
  if (in.data_len != 32) return 2;
  u8 bump[1];
  SolPubkey found, made;
  SolSignerSeed seeds[2] = {{(const u8 *)"psyche", 6}, {bump, 1}};
  if (sol_try_find_program_address(seeds, 1, in.program_id, &found, bump) != 0) return 3;
  if (sol_create_program_address(seeds, 2, in.program_id, &made) != 0) return 4;
  if (!mem_eq(found.bytes, in.data, 32) || !mem_eq(made.bytes, in.data, 32)) return 1;
  return 1000 + bump[0];
}
`;
  const programDir = new URL("../program/", import.meta.url).pathname;
  const linked = linkSbpfV0(await compile(source, [`-I${programDir}`, "-Wno-unused-function"]));
  for (const name of ["sol_try_find_program_address", "sol_create_program_address"]) {
    assert.ok(linked.syscalls.includes(name), `${name} in ${linked.syscalls.join(", ")}`);
  }
  const svm = new LiteSVM();
  const program = await generateKeyPairSigner();
  svm.addProgram(program.address, linked.bytes);
  const payer = await generateKeyPairSigner();
  svm.airdrop(payer.address, lamports(1_000_000_000n));
  const [pda, bump] = await getProgramDerivedAddress({
    programAddress: program.address,
    seeds: ["psyche"],
  });
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: svm.latestBlockhash(), lastValidBlockHeight: 100n },
        m,
      ),
    (m) =>
      appendTransactionMessageInstruction({
        programAddress: program.address,
        data: getAddressEncoder().encode(pda),
      }, m),
  );
  const result = svm.sendTransaction(await signTransactionMessageWithSigners(message));
  assert.ok(result instanceof FailedTransactionMetadata);
  assert.match(result.toString(), new RegExp(`Custom\\(${1000 + bump}\\)`));
});
