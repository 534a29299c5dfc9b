/**
 * The frame that carries a state to one connection: the whole state (`State`), or its
 * difference from the state that connection got last (`StateDelta`, state_delta.ts), whichever
 * is smaller. A push usually finds every connection with the same previous state, so frames
 * are remembered by (previous state, state) and each is built once per push, not once per
 * connection.
 *
 * @module
 */
import { sha256 } from "../core/mod.ts";
import { encodeServerMessage, STATE_CHECKSUM_BYTES } from "./protocol.ts";
import { deltaWireBytes, diffBytes } from "./state_delta.ts";

/** Frames remembered: enough for the connections that skipped a push or two. */
const REMEMBERED = 8;

/** Builds and remembers state frames. One per server. */
export class StateFrames {
  #recent: { base: Uint8Array | null; state: Uint8Array; frame: Uint8Array }[] = [];

  /** The frame that takes a connection holding `base` (null: nothing yet) to `state`. */
  frame(base: Uint8Array | null, state: Uint8Array): Uint8Array {
    const known = this.#recent.find((r) => r.base === base && r.state === state);
    if (known !== undefined) return known.frame;
    const frame = this.#build(base, state);
    this.#recent.push({ base, state, frame });
    if (this.#recent.length > REMEMBERED) this.#recent.shift();
    return frame;
  }

  #build(base: Uint8Array | null, state: Uint8Array): Uint8Array {
    const whole = () => encodeServerMessage({ kind: "State", bytes: state });
    if (base === null) return whole();
    const ops = diffBytes(base, state);
    // A delta's own fields (length, checksum, count) against the whole state's length field.
    if (deltaWireBytes(ops) + 4 + STATE_CHECKSUM_BYTES >= state.length) return whole();
    return encodeServerMessage({
      kind: "StateDelta",
      length: state.length,
      checksum: sha256(state).subarray(0, STATE_CHECKSUM_BYTES),
      ops,
    });
  }
}
