/**
 * Latency for the network lab (topology 2): the coordinator and its relay behind delaying
 * proxies (net/testing/delay_proxy.ts) on the lab's public address, the relay announcing its
 * proxy (`--relay-announce`). Behind NAT every byte between peers crosses the relay, so a
 * client's round trip to the relay grows by `2 x delayMs` and to a peer by `4 x delayMs`. The
 * kernel here has neither `netem` nor `fq`, so the delay is added in user space.
 *
 * @module
 */
import { startDelayProxy } from "../../net/testing/delay_proxy.ts";
import { freePort } from "../testnet/mod.ts";
import type { TestNetwork } from "./netns.ts";

/** The testnet options that put a run's coordinator and relay behind delaying proxies. */
export interface DelayedRelay extends AsyncDisposable {
  /** The coordinator's relay flags: a fixed port, announced through its proxy. */
  readonly coordinatorArgs: string[];
  /** The relay's announced address (its proxy's), without the peer id. */
  readonly relayAddress: string;
  /** Where clients dial the coordinator: its proxy. */
  readonly clientRoute: (serverAddr: string) => string;
}

/** Proxies on `network`'s gateway holding every byte `delayMs` each way; dispose to close them. */
export function delayedRelay(network: TestNetwork, delayMs: number): DelayedRelay {
  const proxies = new AsyncDisposableStack();
  const delayed = (port: number) => {
    const proxy = startDelayProxy({
      listen: { hostname: network.gateway, port: 0 },
      target: { hostname: network.gateway, port },
      delayMs,
    });
    proxies.use(proxy);
    return proxy.port;
  };
  const relayPort = freePort();
  const relayAddress = `/ip4/${network.gateway}/tcp/${delayed(relayPort)}`;
  return {
    coordinatorArgs: ["--relay-port", String(relayPort), "--relay-announce", relayAddress],
    relayAddress,
    clientRoute: (address) => `${network.gateway}:${delayed(Number(address.split(":").at(-1)))}`,
    [Symbol.asyncDispose]: () => proxies.disposeAsync(),
  };
}
