/**
 * libp2p pieces that more than the client uses: the circuit relay that a coordinator (or a
 * public client) serves, so clients behind NAT can meet.
 *
 * @module
 */
export { type Relay, type RelayOptions, type RelayStats, startRelay } from "./relay.ts";
