/**
 * One role of the flat parameter layout (parameters, gradients, an optimizer state) on the GPU:
 * one buffer per segment of {@link paramSegments}, so no buffer exceeds `maxBufferSize`. A tensor
 * at flat offset `o` in segment `s` lives at `o − segments[s].start` in `buffers[s]`. Every role
 * of one model shares one segmentation, so kernels pairing roles (AdamW: θ, g, m, v) pair the
 * buffers of the same segment. With one segment (the common case) `buffers[0]` is the flat buffer.
 *
 * @module
 */
import { paramEntry, type ParamLayout, type ParamSegment, segmentIndex } from "./params.ts";
import type { GpuRuntime, TensorView } from "../shaders/mod.ts";

/** A flat-layout role in segment buffers. Dispose it to free them. */
export class ParamBuffers implements Disposable {
  readonly layout: ParamLayout;
  readonly segments: readonly ParamSegment[];
  /** `buffers[s]` holds `[segments[s].size]` floats. */
  readonly buffers: readonly GPUBuffer[];
  readonly #rt: GpuRuntime;

  /** Zeros, or a copy of `init` (`[layout.totalSize]`). */
  constructor(
    rt: GpuRuntime,
    options: {
      label: string;
      layout: ParamLayout;
      segments: readonly ParamSegment[];
      init?: Float32Array;
    },
  ) {
    const { label, layout, segments, init } = options;
    if (init !== undefined && init.length !== layout.totalSize) {
      throw new RangeError(
        `${label}: initial values hold ${init.length} floats, layout needs ${layout.totalSize}`,
      );
    }
    this.#rt = rt;
    this.layout = layout;
    this.segments = segments;
    this.buffers = segments.map((s, i) => {
      const name = segments.length === 1 ? label : `${label} segment ${i}`;
      return rt.buffer(name, init ? init.subarray(s.start, s.start + s.size) : s.size * 4);
    });
  }

  /** Floats in all segments together (`layout.totalSize`). */
  get totalSize(): number {
    return this.layout.totalSize;
  }

  /** The view of tensor `name` in its segment's buffer. */
  view(name: string): TensorView {
    const e = paramEntry(this.layout, name);
    return this.slice(e.offset, e.size);
  }

  /**
   * The view of flat floats `[start, start + size)`, which must lie in one segment (a RangeError
   * says which segments it spans otherwise).
   */
  slice(start: number, size: number): { buffer: GPUBuffer; offset: number; size: number } {
    const s = this.segmentOf(start);
    const seg = this.segments[s];
    if (start + size > seg.start + seg.size) {
      throw new RangeError(
        `flat range [${start}, ${start + size}) crosses the end of segment ${s} ` +
          `[${seg.start}, ${seg.start + seg.size})`,
      );
    }
    return { buffer: this.buffers[s], offset: (start - seg.start) * 4, size: size * 4 };
  }

  /** Index of the segment holding flat float `offset`. */
  segmentOf(offset: number): number {
    return segmentIndex(this.segments, offset);
  }

  /** Encodes zeroing every segment. */
  encodeClear(encoder: GPUCommandEncoder): void {
    for (const b of this.buffers) encoder.clearBuffer(b);
  }

  /** Encodes copying every segment into `other` (same layout and segmentation). */
  encodeCopyTo(encoder: GPUCommandEncoder, other: ParamBuffers): void {
    this.#requireSameSegments(other);
    this.buffers.forEach((b, s) => {
      encoder.copyBufferToBuffer(b, 0, other.buffers[s], 0, this.segments[s].size * 4);
    });
  }

  /** Reads all segments back as one flat `[layout.totalSize]` array. */
  async read(options: { signal?: AbortSignal } = {}): Promise<Float32Array> {
    if (this.buffers.length === 1) {
      return await this.#rt.read({ buffer: this.buffers[0], size: this.totalSize * 4 }, options);
    }
    const parts = await Promise.all(
      this.buffers.map((buffer, s) =>
        this.#rt.read({ buffer, size: this.segments[s].size * 4 }, options)
      ),
    );
    const flat = new Float32Array(this.totalSize);
    parts.forEach((p, s) => flat.set(p, this.segments[s].start));
    return flat;
  }

  /** Queues writing a flat `[layout.totalSize]` array into the segments. */
  write(flat: Float32Array): void {
    if (flat.length !== this.totalSize) {
      throw new RangeError(`expected ${this.totalSize} floats, found ${flat.length}`);
    }
    this.segments.forEach((s, i) => {
      this.#rt.write(this.buffers[i], flat.subarray(s.start, s.start + s.size));
    });
  }

  /** Whether `other` has this layout's size and the same segment boundaries. */
  sameSegments(other: { segments: readonly ParamSegment[] }): boolean {
    return other.segments.length === this.segments.length &&
      other.segments.every((s, i) =>
        s.start === this.segments[i].start && s.size === this.segments[i].size
      );
  }

  #requireSameSegments(other: ParamBuffers): void {
    if (!this.sameSegments(other)) {
      throw new RangeError(
        `"${other.buffers[0]?.label}" is not split like "${this.buffers[0]?.label}"`,
      );
    }
  }

  /** Frees the segment buffers. */
  [Symbol.dispose](): void {
    for (const b of this.buffers) this.#rt.destroyBuffer(b);
  }
}
