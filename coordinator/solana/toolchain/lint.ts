/**
 * Rejects eBPF instructions whose meaning differs, or that do not exist, in SBPF v0 (the
 * instruction set Solana clusters run). clang's `-mcpu=v1/v2` avoids most of them, but the
 * linker checks every instruction anyway: a silently different result is worse than a
 * failed build.
 *
 * - JMP32 (class 0x06): SBPF v0 has no 32-bit conditional jumps (the verifier rejects them).
 * - ALU32 `add`, `sub`, `mul`, `neg`: SBPF v0 sign-extends their 32-bit results into the
 *   64-bit register where eBPF zero-extends them, so the same bytes compute different values.
 * - eBPF v4 forms: sign-extending loads (BPF_MEMSX), `movsx` / `sdiv` / `smod` (ALU with a
 *   non-zero offset), 64-bit byte swap, and atomic read-modify-write (BPF_ATOMIC).
 * - `callx` (indirect calls) and legacy packet loads.
 *
 * @module
 */

/** An instruction the sBPF v0 lint rejects. */
export class SbpfLintError extends Error {
  /** Index (in 8-byte slots) of the offending instruction in `.text`. */
  readonly pc: number;
  /** Its opcode byte. */
  readonly opcode: number;
  constructor(pc: number, opcode: number, why: string, symbol?: string) {
    const where = symbol === undefined ? "" : ` (in ${symbol})`;
    super(
      `instruction ${pc}${where}, opcode 0x${opcode.toString(16).padStart(2, "0")}: ${why}`,
    );
    this.name = "SbpfLintError";
    this.pc = pc;
    this.opcode = opcode;
  }
}

const CLASS_LD = 0x00;
const CLASS_LDX = 0x01;
const CLASS_ST = 0x02;
const CLASS_STX = 0x03;
const CLASS_ALU = 0x04;
const CLASS_JMP = 0x05;
const CLASS_JMP32 = 0x06;
const CLASS_ALU64 = 0x07;

const LDDW = 0x18;
const MODE_MEM = 0x60;

const ALU32_SIGN_EXTENDING: Record<number, string> = {
  0x00: "add32",
  0x10: "sub32",
  0x20: "mul32",
  0x80: "neg32",
};

/**
 * Checks `text` (a whole `.text` section, 8-byte instructions, `lddw` taking two) and
 * throws {@linkcode SbpfLintError} at the first instruction SBPF v0 would run differently
 * or reject. `symbolAt(pc)` may name the function containing `pc` for the message.
 */
export function lintSbpfV0(text: Uint8Array, symbolAt?: (pc: number) => string | undefined): void {
  if (text.length % 8 !== 0) {
    throw new RangeError(
      `.text is ${text.length} bytes, not a whole number of 8-byte instructions`,
    );
  }
  const n = text.length / 8;
  const fail = (pc: number, why: string): never => {
    throw new SbpfLintError(pc, text[pc * 8], why, symbolAt?.(pc));
  };
  for (let pc = 0; pc < n; pc++) {
    const at = pc * 8;
    const op = text[at];
    const cls = op & 0x07;
    const offset = text[at + 2] | (text[at + 3] << 8);
    switch (cls) {
      case CLASS_LD:
        if (op !== LDDW) fail(pc, "legacy packet loads do not exist in sBPF");
        if (pc + 1 >= n || text[at + 8] !== 0) {
          fail(pc, "lddw must be followed by its second half (opcode 0)");
        }
        pc++;
        break;
      case CLASS_LDX:
      case CLASS_ST:
      case CLASS_STX: {
        const mode = op & 0xe0;
        if (mode === 0x80) fail(pc, "sign-extending loads (eBPF v4) do not exist in sBPF v0");
        if (mode === 0xc0) fail(pc, "atomic operations do not exist in sBPF v0");
        if (mode !== MODE_MEM) {
          fail(pc, `memory mode 0x${mode.toString(16)} does not exist in sBPF v0`);
        }
        break;
      }
      case CLASS_ALU: {
        const aluOp = op & 0xf0;
        const name = ALU32_SIGN_EXTENDING[aluOp];
        if (name !== undefined) {
          fail(
            pc,
            `${name} sign-extends its result in sBPF but zero-extends it in eBPF; compile with -mcpu=v2 and no -malu32`,
          );
        }
        if (offset !== 0) {
          fail(pc, "signed division / sign-extending move (eBPF v4) do not exist in sBPF v0");
        }
        break;
      }
      case CLASS_ALU64: {
        const aluOp = op & 0xf0;
        if (aluOp === 0xd0) fail(pc, "64-bit byte swap (eBPF v4) does not exist in sBPF v0");
        if (offset !== 0 && (aluOp === 0x30 || aluOp === 0x90 || aluOp === 0xb0)) {
          fail(pc, "signed division / sign-extending move (eBPF v4) do not exist in sBPF v0");
        }
        break;
      }
      case CLASS_JMP:
        if (op === 0x8d) {
          fail(pc, "indirect calls (callx) are not supported; call functions directly");
        }
        break;
      case CLASS_JMP32:
        fail(pc, "32-bit jumps (JMP32) do not exist in sBPF v0; compile with -mcpu=v1 or v2");
    }
  }
}
