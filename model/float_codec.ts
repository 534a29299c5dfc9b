/**
 * Conversions between f32 and the 16-bit float formats checkpoints use (bfloat16, IEEE half).
 *
 * f32 → 16-bit rounds to nearest, ties to even, like PyTorch's `.to(torch.bfloat16)` and
 * `.half()`: overflow becomes ±inf, tiny values become subnormals or ±0, NaNs stay NaNs with as
 * much of their payload as fits. 16-bit → f32 is exact, so every 16-bit pattern survives a trip
 * through f32 unchanged (checkpoints round-trip bit for bit).
 *
 * @module
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The bits of the f32 nearest to `x`. */
export function f32Bits(x: number): number {
  f32[0] = x;
  return u32[0];
}

/** The f32 (as a JS number) whose bits are `bits`. */
export function f32FromBits(bits: number): number {
  u32[0] = bits >>> 0;
  return f32[0];
}

/** bfloat16 bits of `x` (rounded to f32 first), round-to-nearest-even. */
export function f32ToBf16Bits(x: number): number {
  return bf16FromF32Bits(f32Bits(x));
}

function bf16FromF32Bits(u: number): number {
  if ((u & 0x7f800000) === 0x7f800000 && (u & 0x007fffff) !== 0) {
    // NaN: keep the high payload bits; force a mantissa bit if they were all zero.
    const hi = u >>> 16;
    return (hi & 0x7f) === 0 ? hi | 0x40 : hi;
  }
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The f32 value of bfloat16 bits (exact). */
export function bf16BitsToF32(h: number): number {
  return f32FromBits((h & 0xffff) << 16);
}

/** IEEE half bits of `x` (rounded to f32 first), round-to-nearest-even with subnormals. */
export function f32ToF16Bits(x: number): number {
  return f16FromF32Bits(f32Bits(x));
}

function f16FromF32Bits(u: number): number {
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  const mant = u & 0x7fffff;
  if (exp === 0xff) {
    if (mant === 0) return sign | 0x7c00;
    const m = mant >>> 13;
    return sign | 0x7c00 | (m === 0 ? 0x200 : m);
  }
  const e = exp - 112; // rebias 127 → 15
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign; // below half the smallest subnormal (f32 subnormals land here too)
    const m = mant | 0x800000;
    const shift = 14 - e;
    let r = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (r & 1) === 1)) r++;
    return sign | r;
  }
  let r = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (r & 1) === 1)) r++;
  return sign | r;
}

/** The f32 value of IEEE half bits (exact). */
export function f16BitsToF32(h: number): number {
  return f32FromBits(f32BitsFromF16(h));
}

/** The f32 bits of the value of IEEE half bits (exact, NaN payloads kept). */
function f32BitsFromF16(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) {
    if (mant === 0) return sign >>> 0;
    // Subnormal: normalise the mantissa into f32's implicit-bit form.
    const lead = 31 - Math.clz32(mant); // 0..9
    const frac = (mant << (10 - lead)) & 0x3ff;
    return (sign | ((lead + 103) << 23) | (frac << 13)) >>> 0;
  }
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0;
  return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
}

/** Converts a whole f32 array to bfloat16 bits. */
export function encodeBf16(values: Float32Array): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = bf16FromF32Bits(bits[i]);
  return out;
}

/** Converts bfloat16 bits to f32 (exact). */
export function decodeBf16(halves: Uint16Array): Float32Array {
  const out = new Uint32Array(halves.length);
  for (let i = 0; i < halves.length; i++) out[i] = halves[i] << 16;
  return new Float32Array(out.buffer);
}

/** Converts a whole f32 array to IEEE half bits. */
export function encodeF16(values: Float32Array): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = f16FromF32Bits(bits[i]);
  return out;
}

/** Converts IEEE half bits to f32 (exact). */
export function decodeF16(halves: Uint16Array): Float32Array {
  const out = new Uint32Array(halves.length);
  for (let i = 0; i < halves.length; i++) out[i] = f32BitsFromF16(halves[i]);
  return new Float32Array(out.buffer);
}
