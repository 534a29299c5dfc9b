/**
 * Pull-style reading of a libp2p stream that cannot miss data or the end: listeners are attached
 * when the reader is created (right after the stream opens), chunks are queued until `next()`
 * takes them, and the stream is paused while too much is queued.
 *
 * (A `for await` over the stream attaches its listeners only on the first `next()`, so an end
 * that arrives before the loop starts could be missed.)
 *
 * @module
 */
import type { Stream, StreamCloseEvent, StreamMessageEvent } from "@libp2p/interface";

/** Queued bytes above which the stream is paused until the reader catches up. */
const HIGH_WATER_BYTES = 16 * 1024 * 1024;

/** Reads a stream chunk by chunk; `next()` resolves `undefined` at the end. */
export class StreamReader {
  readonly #stream: Stream;
  readonly #chunks: Uint8Array[] = [];
  #queued = 0;
  #ended = false;
  #error: Error | undefined;
  #wake: (() => void) | undefined;
  readonly #onMessage = (event: StreamMessageEvent) => {
    const data = event.data;
    if (data instanceof Uint8Array) this.#push(data);
    else for (const part of data) this.#push(part);
    if (this.#queued > HIGH_WATER_BYTES) this.#stream.pause();
    this.#notify();
  };
  readonly #onEnd = () => {
    this.#ended = true;
    this.#notify();
  };
  readonly #onClose = (event: StreamCloseEvent) => {
    if (event.error !== undefined) this.#error = event.error;
    this.#ended = true;
    this.#notify();
  };

  /** Starts listening to `stream` at once. */
  constructor(stream: Stream) {
    this.#stream = stream;
    stream.addEventListener("message", this.#onMessage);
    stream.addEventListener("remoteCloseWrite", this.#onEnd);
    stream.addEventListener("close", this.#onClose);
    // A stream can end before its reader exists; a reset or abort is then an error, not an end.
    if (stream.status === "reset" || stream.status === "aborted") {
      this.#error = new Error(`stream was ${stream.status} before it was read`);
    }
    if (stream.readStatus === "closed" || stream.status !== "open") this.#ended = true;
  }

  /** Bytes received and not yet taken with `next()`. */
  get queuedBytes(): number {
    return this.#queued;
  }

  /** The next chunk, or `undefined` once the remote finished sending. Rejects on a stream error. */
  async next(): Promise<Uint8Array | undefined> {
    while (this.#chunks.length === 0) {
      if (this.#error !== undefined) throw this.#error;
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => this.#wake = resolve);
    }
    const chunk = this.#chunks.shift()!;
    this.#queued -= chunk.length;
    if (this.#queued <= HIGH_WATER_BYTES / 2 && this.#stream.readStatus === "paused") {
      this.#stream.resume();
    }
    return chunk;
  }

  /** Detaches from the stream. */
  release(): void {
    this.#stream.removeEventListener("message", this.#onMessage);
    this.#stream.removeEventListener("remoteCloseWrite", this.#onEnd);
    this.#stream.removeEventListener("close", this.#onClose);
  }

  #push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#queued += chunk.length;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
