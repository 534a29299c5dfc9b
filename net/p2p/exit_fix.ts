/**
 * Lets a Deno process exit after its libp2p node stops.
 *
 * A libp2p dependency opens a `BroadcastChannel`; Deno's web `BroadcastChannel` keeps the event
 * loop alive and cannot be unref'd, so `deno run` hangs after `node.stop()`. Node's
 * implementation from `node:worker_threads` behaves like Node and lets the process exit.
 * Import this module before anything that loads libp2p (the node factory in this folder already
 * does, so importing `client/p2p/mod.ts` is enough).
 *
 * @module
 */
import { BroadcastChannel as NodeBroadcastChannel } from "node:worker_threads";

(globalThis as { BroadcastChannel: unknown }).BroadcastChannel = NodeBroadcastChannel;
