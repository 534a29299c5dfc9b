/**
 * A content digest of a large buffer, computed where the buffer lives.
 *
 * Clients log a digest of their parameters after every apply so that runs and tests can check
 * that every honest client holds the same bits. Reading all of θ back and hashing it with sha256
 * sits on the client's path to its next training step, grows with the model (4 GB over the bus
 * for a 1B model, then one CPU core), and costs several times this digest (docs/benchmarks.md,
 * "Parameter digest").
 * Here the GPU mixes each block of {@link DIGEST_BLOCK_WORDS} words into 64 bits with integer
 * operations only, which every adapter computes alike, and the host hashes those block digests
 * (1/512 of the bytes) with sha256.
 *
 * Block `b` (words `w[0..m)`, `m ≤ DIGEST_BLOCK_WORDS`, the last block shorter) is mixed in 4
 * lanes, word `j` into lane `j mod 4`. Each lane keeps two 32-bit states, `a` and `h`, updated
 * per word by Murmur3-style steps with different constants. Every step is a bijection of the
 * state, so changing any one word always changes both states of its lane. At the end the lanes'
 * `a` states are chained through the bijective `fmix32` into one word, and their `h` states into
 * another. The digest is sha256 over `"psyche-digest-v1"`, the word count (u64 LE) and every
 * block's two words (u32 LE), as hex.
 *
 * A changed word is always detected; changes that cancel inside a block need both 32-bit chains
 * to collide. This is an integrity check between cooperating replicas, not a commitment: a peer
 * that wants to forge it can.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { GpuRuntime, GpuStep, TensorView } from "./gpu.ts";
import { resolveView } from "./gpu.ts";
import { runSteps } from "../common/mod.ts";
import { bindTensors, ceilDiv, dispatch, granuleStretches, grid1d, rowBlocks } from "./kernel.ts";

/** Words mixed into one block digest (4 KB of f32). */
export const DIGEST_BLOCK_WORDS = 1024;

const TAG = "psyche-digest-v1";
/** Lane seeds of the two states, and the per-word multipliers of Murmur3 and a second set. */
const SEED_A = [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344];
const SEED_H = [0xa4093822, 0x299f31d0, 0x082efa98, 0xec4e6c89];
const C1 = 0xcc9e2d51, C2 = 0x1b873593, C3 = 0x85ebca77, C4 = 0xc2b2ae3d;
const GOLDEN = 0x9e3779b9;

const rotl = (x: number, r: number) => ((x << r) | (x >>> (32 - r))) >>> 0;

function fmix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/**
 * Block digests of `words` (two u32 per block of {@link DIGEST_BLOCK_WORDS}), the reference the
 * GPU kernel is tested against. `firstBlock`: the index of `words`' first block in the whole
 * buffer, when `words` is a block-aligned piece of it (a digest made a piece at a time).
 */
export function blockDigests(words: Uint32Array, firstBlock = 0): Uint32Array {
  const blocks = ceilDiv(words.length, DIGEST_BLOCK_WORDS);
  const out = new Uint32Array(2 * blocks);
  const a = new Uint32Array(4), h = new Uint32Array(4);
  for (let i = 0; i < blocks; i++) {
    const b = firstBlock + i;
    const start = i * DIGEST_BLOCK_WORDS;
    const end = Math.min(words.length, start + DIGEST_BLOCK_WORDS);
    for (let l = 0; l < 4; l++) {
      a[l] = SEED_A[l] ^ b;
      h[l] = SEED_H[l] + b;
    }
    for (let j = start; j < end; j++) {
      const l = (j - start) & 3, k = words[j];
      a[l] = Math.imul(rotl(a[l] ^ Math.imul(rotl(Math.imul(k, C1), 15), C2), 13), 5) +
        0xe6546b64;
      h[l] = Math.imul(rotl(h[l] ^ Math.imul(rotl(Math.imul(k, C3), 17), C4), 11), 9) +
        0x52dce729;
    }
    let x = end - start, y = (b ^ GOLDEN) >>> 0;
    for (let l = 0; l < 4; l++) {
      x = fmix32((x ^ a[l]) >>> 0);
      y = fmix32((y + h[l]) >>> 0);
    }
    out[2 * i] = x;
    out[2 * i + 1] = y;
  }
  return out;
}

/** The digest of `words` words from their block digests (what both paths end with). */
export function digestOfBlocks(words: number, blocks: Uint32Array): string {
  if (blocks.length !== 2 * ceilDiv(words, DIGEST_BLOCK_WORDS)) {
    throw new RangeError(`digest: ${blocks.length} block words for ${words} words`);
  }
  const count = new DataView(new ArrayBuffer(8));
  count.setBigUint64(0, BigInt(words), true);
  return createHash("sha256")
    .update(TAG)
    .update(new Uint8Array(count.buffer))
    .update(new Uint8Array(blocks.buffer, blocks.byteOffset, blocks.byteLength))
    .digest("hex");
}

/** Bytes {@link digestBytes} mixes between two progress reports: 64 MiB, well under a second. */
export const DIGEST_PROGRESS_BYTES = 64 * 2 ** 20;

/** Options of {@link digestBytes} and {@link digestBytesYielding}. */
export interface HostDigestOptions {
  /** Hears the bytes done after every `chunkBytes` (rounded to whole blocks) and at the end. */
  onProgress?: (doneBytes: number, totalBytes: number) => void;
  /** Bytes between two reports (default {@link DIGEST_PROGRESS_BYTES}). */
  chunkBytes?: number;
}

/**
 * The digest of a buffer's bytes on the host (its length must be a multiple of 4). It takes
 * seconds for a 1B model's 4.9 GB, so `onProgress` can say how far it got.
 */
export function digestBytes(bytes: Uint8Array, options: HostDigestOptions = {}): string {
  return runSteps(digestSteps(bytes, options));
}

/**
 * {@link digestBytes}, giving the event loop a turn after every chunk: a screen that repaints
 * on a timer (the client's TUI) shows the progress while a 1B model is digested.
 */
export async function digestBytesYielding(
  bytes: Uint8Array,
  options: HostDigestOptions = {},
): Promise<string> {
  const steps = digestSteps(bytes, options);
  let step = steps.next();
  while (!step.done) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    step = steps.next();
  }
  return step.value;
}

/**
 * The digest's work as steps, pausing after every chunk's report; returns the digest. The
 * caller decides what a pause is: nothing ({@link digestBytes}), a turn of the event loop
 * ({@link digestBytesYielding}), or a pause inside a longer job made of such steps.
 */
export function* digestSteps(
  bytes: Uint8Array,
  options: HostDigestOptions = {},
): Generator<void, string> {
  if (bytes.byteLength % 4 !== 0) {
    throw new RangeError(`digest: ${bytes.byteLength} bytes is not a whole number of words`);
  }
  const words = bytes.byteOffset % 4 === 0
    ? new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
    : new Uint32Array(bytes.slice().buffer);
  const blocksPerChunk = Math.max(
    1,
    Math.floor((options.chunkBytes ?? DIGEST_PROGRESS_BYTES) / (4 * DIGEST_BLOCK_WORDS)),
  );
  const chunkWords = blocksPerChunk * DIGEST_BLOCK_WORDS;
  const blocks = new Uint32Array(2 * ceilDiv(words.length, DIGEST_BLOCK_WORDS));
  for (let start = 0; start < words.length; start += chunkWords) {
    const end = Math.min(words.length, start + chunkWords);
    const first = start / DIGEST_BLOCK_WORDS;
    blocks.set(blockDigests(words.subarray(start, end), first), 2 * first);
    options.onProgress?.(4 * end, bytes.byteLength);
    if (end < words.length) yield;
  }
  return digestOfBlocks(words.length, blocks);
}

/**
 * One invocation per block: the block's vec4 groups in order (lane `j mod 4` is vec4
 * component `j mod 4`), then the two chains. Buffers are digested in whole vec4.
 */
export function blockDigestKernel(wg: number): string {
  const hex = (x: number) => `0x${x.toString(16)}u`;
  const vec = (xs: number[]) => `vec4<u32>(${xs.map(hex).join(", ")})`;
  return /* wgsl */ `struct Params { words: u32, blocks: u32, first_block: u32, _p: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2<u32>>;

fn rotl(x: vec4<u32>, r: u32) -> vec4<u32> {
  return (x << vec4<u32>(r)) | (x >> vec4<u32>(32u - r));
}
fn fmix32(v: u32) -> u32 {
  var x = (v ^ (v >> 16u)) * 0x85ebca6bu;
  x = (x ^ (x >> 13u)) * 0xc2b2ae35u;
  return x ^ (x >> 16u);
}

@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let local = (wid.x + wid.y * nwg.x) * ${wg}u + li;
  if (local >= p.blocks) { return; }
  let b = p.first_block + local;
  let start = local * ${DIGEST_BLOCK_WORDS / 4}u;
  let groups = min(p.words / 4u - start, ${DIGEST_BLOCK_WORDS / 4}u);
  var a = ${vec(SEED_A)} ^ vec4<u32>(b);
  var h = ${vec(SEED_H)} + vec4<u32>(b);
  for (var g = 0u; g < groups; g++) {
    let k = w[start + g];
    a = rotl(a ^ (rotl(k * ${hex(C1)}, 15u) * ${hex(C2)}), 13u) * 5u + 0xe6546b64u;
    h = rotl(h ^ (rotl(k * ${hex(C3)}, 17u) * ${hex(C4)}), 11u) * 9u + 0x52dce729u;
  }
  var x = 4u * groups;
  var y = b ^ ${hex(GOLDEN)};
  for (var l = 0u; l < 4u; l++) {
    x = fmix32(x ^ a[l]);
    y = fmix32(y + h[l]);
  }
  out[local] = vec2<u32>(x, y);
}
`;
}

/** Computes {@link digestBytes} of GPU buffers on the GPU. */
export class GpuDigest implements Disposable {
  readonly #rt: GpuRuntime;
  readonly #wg: number;
  #out: GPUBuffer | null = null;
  /** Blocks straddling two views, gathered whole. */
  #gather: GPUBuffer | null = null;

  constructor(rt: GpuRuntime, workgroupSize: number = rt.profile.workgroupSize) {
    this.#rt = rt;
    this.#wg = workgroupSize;
  }

  /**
   * Queues the block digests of `view` (a whole number of vec4: 16 bytes) into `step` and
   * returns a read of the digest, which waits for the step's submission. Several views are
   * digested as their concatenation (parameters split into segment buffers): blocks straddling
   * two views are gathered whole first, so the digest is that of one buffer holding them all.
   */
  encode(step: GpuStep, view: TensorView | readonly TensorView[]): () => Promise<string> {
    const views = (Array.isArray(view) ? view : [view]).map(resolveView);
    const align = this.#rt.limits.minStorageBufferOffsetAlignment;
    const segments: { start: number; size: number }[] = [];
    let words = 0;
    for (const { buffer, offset, size } of views) {
      if (size % 16 !== 0) {
        throw new RangeError(`digest: "${buffer.label}" is ${size} bytes, not a multiple of 16`);
      }
      if (offset % align !== 0) {
        throw new RangeError(
          `digest: a view of "${buffer.label}" at offset ${offset} is not ${align}-byte aligned`,
        );
      }
      segments.push({ start: words, size: size / 4 });
      words += size / 4;
    }
    const blockBytes = DIGEST_BLOCK_WORDS * 4;
    const stretches = granuleStretches(segments, DIGEST_BLOCK_WORDS);
    // Each stretch's block digests go to an aligned region of `out`; the host puts them in order.
    const regions: { at: number; first: number; blocks: number }[] = [];
    let outBytes = 0;
    for (const st of stretches) {
      const at = Math.ceil(outBytes / align) * align;
      const blocks = ceilDiv(st.size, DIGEST_BLOCK_WORDS);
      regions.push({ at, first: st.start / DIGEST_BLOCK_WORDS, blocks });
      outBytes = at + blocks * 8;
    }
    const gathered = stretches.filter((st) => st.parts.length > 1).length;
    const out = this.#outBuffer(outBytes / 8);
    const gather = gathered > 0 ? this.#gatherBuffer(gathered * blockBytes) : null;
    let g = 0;
    stretches.forEach((st, i) => {
      if (st.parts.length === 1) {
        const v = views[st.parts[0].segment];
        const offset = v.offset + (st.start - segments[st.parts[0].segment].start) * 4;
        this.#encodeRun(step, { buffer: v.buffer, offset, size: st.size * 4 }, out, regions[i]);
        return;
      }
      const at = g++ * blockBytes;
      for (const part of st.parts) {
        const v = views[part.segment];
        step.encoder.copyBufferToBuffer(
          v.buffer,
          v.offset + (part.start - segments[part.segment].start) * 4,
          gather!,
          at + (part.start - st.start) * 4,
          part.size * 4,
        );
      }
      this.#encodeRun(step, { buffer: gather!, offset: at, size: st.size * 4 }, out, regions[i]);
    });
    const total = ceilDiv(words, DIGEST_BLOCK_WORDS);
    return async () => {
      const all = await this.#rt.readU32({ buffer: out, offset: 0, size: outBytes });
      if (regions.length === 1) return digestOfBlocks(words, all.subarray(0, 2 * total));
      const digests = new Uint32Array(2 * total);
      for (const r of regions) {
        digests.set(all.subarray(r.at / 4, r.at / 4 + 2 * r.blocks), 2 * r.first);
      }
      return digestOfBlocks(words, digests);
    };
  }

  /**
   * The block digests of a run of whole blocks (`view`, the last maybe short) that starts at
   * block `region.first` of the whole, into `out` from byte `region.at`.
   */
  #encodeRun(
    step: GpuStep,
    view: { buffer: GPUBuffer; offset: number; size: number },
    out: GPUBuffer,
    region: { at: number; first: number; blocks: number },
  ): void {
    const { buffer, offset, size } = view;
    const wg = this.#wg;
    const pipeline = this.#rt.pipeline(`digest/${wg}`, () => blockDigestKernel(wg));
    // Bindings are capped (128 MiB on lavapipe): cover the buffer in windows of whole blocks,
    // each a multiple of align/8 blocks so that its 8-byte block digests start aligned too.
    const align = this.#rt.limits.minStorageBufferOffsetAlignment;
    const blockBytes = DIGEST_BLOCK_WORDS * 4;
    const windows = rowBlocks(region.blocks, blockBytes, {
      maxBytes: this.#rt.limits.maxStorageBufferBindingSize,
      alignBytes: align,
      multipleOf: Math.max(1, align / 8),
    });
    const pass = step.pass;
    for (const { start: first, rows: count } of windows) {
      const start = first * blockBytes;
      const bytes = Math.min(size - start, count * blockBytes);
      const group = bindTensors(this.#rt, pipeline, [bytes / 4, count, region.first + first, 0], [
        { buffer, offset: offset + start, size: bytes },
        { buffer: out, offset: region.at + first * 8, size: count * 8 },
      ]);
      dispatch(pass, pipeline, group, grid1d(ceilDiv(count, wg)));
    }
  }

  /** The digest of `view` (or of several views' concatenation) now, in a submission of its own. */
  async digest(view: TensorView | readonly TensorView[]): Promise<string> {
    const step = this.#rt.beginStep("digest");
    const read = this.encode(step, view);
    await step.submit({ wait: false });
    return await read();
  }

  #gatherBuffer(bytes: number): GPUBuffer {
    if (this.#gather === null || this.#gather.size < bytes) {
      if (this.#gather !== null) this.#rt.destroyBuffer(this.#gather);
      this.#gather = this.#rt.buffer("digest gathered blocks", bytes);
    }
    return this.#gather;
  }

  #outBuffer(blocks: number): GPUBuffer {
    if (this.#out === null || this.#out.size < blocks * 8) {
      if (this.#out !== null) this.#rt.destroyBuffer(this.#out);
      this.#out = this.#rt.buffer("digest blocks", blocks * 8);
    }
    return this.#out;
  }

  [Symbol.dispose](): void {
    if (this.#out !== null) this.#rt.destroyBuffer(this.#out);
    this.#out = null;
    if (this.#gather !== null) this.#rt.destroyBuffer(this.#gather);
    this.#gather = null;
  }
}
