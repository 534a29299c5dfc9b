import assert from "node:assert/strict";
import { lintSbpfV0, SbpfLintError } from "./lint.ts";

function insn(op: number, offset = 0, imm = 0): number[] {
  return [op, 0, offset & 0xff, (offset >> 8) & 0xff, imm & 0xff, (imm >> 8) & 0xff, 0, 0];
}

const EXIT = insn(0x95);

function rejects(code: number[], pattern: RegExp, pc: number): void {
  assert.throws(
    () => lintSbpfV0(Uint8Array.from(code)),
    (e) => e instanceof SbpfLintError && e.pc === pc && pattern.test(e.message),
  );
}

Deno.test("lint: accepts 64-bit ALU, memory, jumps, lddw, calls and 32-bit moves", () => {
  const code = [
    ...insn(0x07, 0, 1), // add64 imm
    ...insn(0xb4, 0, 5), // mov32 imm (zero-extends in both)
    ...insn(0x79), // ldxdw
    ...insn(0x7b), // stxdw
    ...insn(0x15, 1), // jeq imm
    ...insn(0x18),
    ...insn(0x00), // lddw pair
    ...insn(0x85, 0, -1), // call
    ...EXIT,
  ];
  lintSbpfV0(Uint8Array.from(code));
});

Deno.test("lint: rejects sign-extending ALU32, JMP32, v4 forms, atomics and callx", () => {
  rejects([...insn(0x04, 0, 1), ...EXIT], /add32 sign-extends/, 0);
  rejects([...EXIT, ...insn(0x0c), ...EXIT], /add32/, 1);
  rejects([...insn(0x1c), ...EXIT], /sub32/, 0);
  rejects([...insn(0x24, 0, 3), ...EXIT], /mul32/, 0);
  rejects([...insn(0x84), ...EXIT], /neg32/, 0);
  rejects([...insn(0x16, 1), ...EXIT], /JMP32/, 0);
  rejects([...insn(0xdb), ...EXIT], /atomic/, 0);
  rejects([...insn(0x91), ...EXIT], /sign-extending loads/, 0);
  rejects([...insn(0xd7), ...EXIT], /byte swap/, 0);
  rejects([...insn(0x3f, 1), ...EXIT], /signed division/, 0);
  rejects([...insn(0x8d), ...EXIT], /callx/, 0);
  rejects([...insn(0x20), ...EXIT], /packet loads/, 0);
  rejects([...insn(0x18)], /second half/, 0);
});

Deno.test("lint: names the function when given a symbol lookup", () => {
  assert.throws(
    () => lintSbpfV0(Uint8Array.from([...EXIT, ...insn(0x16)]), (pc) => (pc >= 1 ? "g" : "f")),
    (e) => e instanceof SbpfLintError && /instruction 1 \(in g\)/.test(e.message),
  );
  assert.throws(() => lintSbpfV0(new Uint8Array(5)), RangeError);
});
