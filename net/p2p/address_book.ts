/**
 * What libp2p's address manager knows of each of a node's addresses, read through a service (a
 * service is handed the node's components; the address manager is not otherwise exposed).
 * libp2p lists (`getMultiaddrs`) an address on a public IP only once AutoNAT confirmed it; the
 * node and the relay need the ones it does not list yet too.
 *
 * @module
 */
import type { Multiaddr } from "@multiformats/multiaddr";

/** One of our addresses as libp2p's address manager holds it. */
export interface AddressRecord {
  readonly multiaddr: Multiaddr;
  /** Private, given by the operator, or confirmed by an AutoNAT dial-back. */
  readonly verified: boolean;
  /** `transport` for a listen address; `observed`, `announce`, ... otherwise. */
  readonly type: string;
  /** Until when a verdict holds (0: never judged). */
  readonly expires: number;
}

/** What libp2p holds of a node's listen addresses, and confirming one. */
export interface AddressBook {
  /** The records of our listen addresses (`type` `transport`). */
  listening(): AddressRecord[];
  /** Marks a listen address reachable, as an AutoNAT dial-back that succeeded would. */
  confirm(address: Multiaddr): void;
}

/** The part of libp2p's address manager the book reads and writes. */
interface AddressManagerPart {
  getAddressesWithMetadata(): AddressRecord[];
  confirmObservedAddr(address: Multiaddr, options: { type: "transport" }): void;
}

/** The service factory: `services: { addressBook }` in `createLibp2p`. */
export function addressBook(components: { addressManager: AddressManagerPart }): AddressBook {
  const manager = components.addressManager;
  return {
    listening: () => manager.getAddressesWithMetadata().filter((r) => r.type === "transport"),
    confirm: (address) => manager.confirmObservedAddr(address, { type: "transport" }),
  };
}
