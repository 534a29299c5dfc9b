/**
 * Ordered, non-overlapping frame writes to one connection. Replies and state pushes come
 * from different tasks (the connection's reader, the tick timer); the outbox writes them
 * one at a time, in order. State pushes coalesce: if one is still waiting when a newer
 * state comes, the newer one takes its place, so a slow client never queues stale states.
 * A state's frame is built when it is written, from the state this connection got last
 * (`stateFrame`: the server sends the difference, state_frames.ts).
 * Replies are never dropped, but a peer that does not read them cannot make the server
 * hold them without end: past `maxQueued` unwritten replies the outbox fails.
 *
 * @module
 */
import { type ByteWriter, writeFrame } from "../../net/mod.ts";

/** Default most replies waiting to be written (an honest client reads its answers). */
export const DEFAULT_MAX_QUEUED_REPLIES = 1024;

/** The peer left more replies unread than the outbox holds. */
export class UnreadRepliesError extends Error {
  /** Always `"UnreadRepliesError"`. */
  override name = "UnreadRepliesError";
}

/** Writes frames to `writer` in order; the first write error closes the outbox. */
export class Outbox {
  readonly #writer: ByteWriter;
  readonly #onError: (error: Error) => void;
  readonly #maxQueued: number;
  #queue: Uint8Array[] = [];
  /** The newest state not yet written (coalesced), or null. */
  #state: Uint8Array | null = null;
  /** The last state written, the base of the next one's frame. */
  #written: Uint8Array | null = null;
  readonly #stateFrame: (base: Uint8Array | null, state: Uint8Array) => Uint8Array;
  #running: Promise<void> | null = null;
  #closed = false;
  /** A last frame was queued (`sendLast`): nothing more is taken, no state follows it. */
  #ending = false;

  /**
   * `onError` is called once, with the first failed write or when more than `maxQueued`
   * replies (default {@linkcode DEFAULT_MAX_QUEUED_REPLIES}) wait unwritten; the caller
   * closes the connection. `stateFrame` makes the frame of a state given the last state
   * written (null before the first); by default a state is its own frame.
   */
  constructor(
    writer: ByteWriter,
    onError: (error: Error) => void,
    options: {
      maxQueued?: number;
      stateFrame?: (base: Uint8Array | null, state: Uint8Array) => Uint8Array;
    } = {},
  ) {
    this.#writer = writer;
    this.#onError = onError;
    this.#maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED_REPLIES;
    this.#stateFrame = options.stateFrame ?? ((_, state) => state);
  }

  /** Queues a frame (replies: never dropped; too many unwritten fail the outbox). */
  send(payload: Uint8Array): void {
    if (this.#closed || this.#ending) return;
    if (this.#queue.length >= this.#maxQueued) {
      this.close();
      this.#onError(new UnreadRepliesError(`the peer left ${this.#maxQueued} replies unread`));
      return;
    }
    this.#queue.push(payload);
    this.#pump();
  }

  /** Queues a state frame, replacing a queued state frame not yet written. */
  sendState(payload: Uint8Array): void {
    if (this.#closed || this.#ending) return;
    this.#state = payload;
    this.#pump();
  }

  /**
   * Queues the connection's last frame (a refusal): it follows the replies already queued, a
   * state frame not yet written is dropped, and nothing sent after it is taken, so the peer reads
   * it last. Found under load: a state pushed while a refusal was being written went out after it.
   */
  sendLast(payload: Uint8Array): void {
    if (this.#closed || this.#ending) return;
    this.#ending = true;
    this.#state = null;
    this.#queue.push(payload);
    this.#pump();
  }

  /** Resolves when everything queued so far has been written (or the outbox failed). */
  async flush(): Promise<void> {
    while (this.#running !== null) await this.#running;
  }

  /** Stops writing; queued frames are dropped. */
  close(): void {
    this.#closed = true;
    this.#queue = [];
    this.#state = null;
  }

  #pump(): void {
    if (this.#running !== null) return;
    this.#running = (async () => {
      try {
        while (!this.#closed) {
          const reply = this.#queue.shift();
          if (reply !== undefined) {
            await writeFrame(this.#writer, reply);
            continue;
          }
          const state = this.#state;
          if (state === null) break;
          this.#state = null;
          await writeFrame(this.#writer, this.#stateFrame(this.#written, state));
          this.#written = state;
        }
      } catch (e) {
        if (!this.#closed) {
          this.close();
          this.#onError(e instanceof Error ? e : new Error(String(e)));
        }
      } finally {
        this.#running = null;
      }
    })();
  }
}
