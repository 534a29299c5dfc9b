/**
 * Hosts on a real network, for tests of what crosses one: each client gets its own Linux
 * network namespace, joined to a bridge in the test's namespace by a veth pair, with its own
 * address on 10.77.x.0/24 (not 127.0.0.1), and a link that can be slowed (a token-bucket rate
 * limit each way) or cut and mended while the run goes on.
 *
 * With `nat`, each host sits instead behind a home router of its own: a namespace on the bridge
 * that masquerades the host's private subnet (10.78.x.0/24) and drops connections dialled in
 * from outside, so peers can reach a host only through a connection it opened.
 *
 * Needs root and iproute2 (`ip`, `tc`), and nftables (`nft`) for `nat`. Everything is named
 * after the test process, so two tests never share a namespace, and `dispose` removes it all.
 *
 * @module
 */

/** One client's host: where it runs and the address peers reach it at. */
export interface NetnsHost {
  /** The network namespace the client runs in (`ip netns exec <netns>`). */
  readonly netns: string;
  /** The address the host itself has: on the test network, or behind its router with `nat`. */
  readonly address: string;
  /** The address the rest of the network sees it at: its router's with `nat`, else `address`. */
  readonly publicAddress: string;
  /** With `nat`, the namespace of its router (for tests that look at or bend its routes). */
  readonly router?: string;
}

/** A test network: a bridge with the coordinator's address, and hosts on it. */
export interface TestNetwork extends AsyncDisposable {
  /** The coordinator's address (on the bridge, in the test's own namespace). */
  readonly gateway: string;
  /** The hosts, in order. */
  readonly hosts: readonly NetnsHost[];
  /** Cuts host `index`'s link (both ways), as a pulled cable or a dead route would. */
  cut(index: number): Promise<void>;
  /** Mends a cut link. */
  mend(index: number): Promise<void>;
  /**
   * Takes a server on the gateway off the network, as when its process dies: every TCP segment
   * to `port` on the bridge is answered with a reset, so open connections end at once and new
   * ones are refused. With `silently`, as when its machine or its link dies: every segment to
   * and from `port` is dropped, so open connections hang until a timeout says so, and new ones
   * are never answered. Needs nftables.
   */
  blockPort(port: number, options?: { silently?: boolean }): Promise<void>;
}

/** Options of {@link createTestNetwork}. */
export interface TestNetworkOptions {
  readonly hosts: number;
  /**
   * Rate limit of every host's link, each way, e.g. `"2mbit"`, or of host `index`'s alone
   * (a function; undefined: no limit). Default: none.
   */
  readonly rate?: string | ((index: number) => string | undefined);
  /**
   * Puts each host behind a masquerading router of its own, as at home (default: false), or
   * host `index` alone (a function).
   */
  readonly nat?: boolean | ((index: number) => boolean);
  /**
   * The first two octets of the public segment (default `10.77`). A public-looking prefix
   * (`11.77`: nothing outside the test's namespaces is routed there) lets libp2p's AutoNAT,
   * which never tests private addresses, judge the hosts on it.
   */
  readonly publicPrefix?: string;
}

/** The `ip` binary (the children run with a cleared environment, so no PATH lookup). */
export const IP = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].find(exists) ?? "ip";
const TC = ["/usr/sbin/tc", "/sbin/tc", "/usr/bin/tc", "/bin/tc"].find(exists) ?? "tc";
const NFT = ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft", "/bin/nft"].find(exists) ?? "nft";

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Why this machine cannot make test networks, or null when it can. */
export function testNetworkUnavailable(options: { nat?: boolean } = {}): string | null {
  if (Deno.uid() !== 0) return "network namespaces need root";
  if (!exists(IP)) return "iproute2's ip is not installed";
  if (options.nat && !exists(NFT)) return "nftables' nft is not installed";
  return null;
}

/**
 * A token bucket's burst for `rate` (`"2mbit"`, `"100mbit"`, ...): 20 ms of traffic, at least
 * 4 KiB. Smaller than a timer tick's worth, the bucket cannot reach its rate.
 */
export function tbfBurstBytes(rate: string): number {
  const match = /^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit)$/.exec(rate);
  if (match === null) throw new RangeError(`rate must look like 2mbit, found "${rate}"`);
  const scale = { bit: 1, kbit: 1e3, mbit: 1e6, gbit: 1e9 }[match[2] as "bit"];
  return Math.max(4096, Math.ceil((Number(match[1]) * scale) / 8 / 50));
}

async function run(program: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(program, { args, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(
      `${program} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr).trim()}`,
    );
  }
}

/**
 * A home router's rules for its public interface `wan`: what leaves takes the router's address,
 * and only replies to what the private side opened come back in.
 */
function homeRouterRules(wan: string): string {
  return `table ip nat {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "${wan}" masquerade
  }
}
table ip filter {
  chain forward {
    type filter hook forward priority filter; policy accept;
    iifname "${wan}" ct state established,related accept
    iifname "${wan}" drop
  }
}`;
}

/**
 * Creates the bridge and `hosts` namespaces (and their routers' with `nat`). On failure, what
 * was made is removed before the error is thrown.
 */
export async function createTestNetwork(options: TestNetworkOptions): Promise<TestNetwork> {
  const tag = `${Deno.pid % 100_000}`;
  const prefix = options.publicPrefix ?? "10.77";
  if (!/^\d{1,3}\.\d{1,3}$/.test(prefix)) {
    throw new RangeError(`publicPrefix must be two octets such as 10.77, found "${prefix}"`);
  }
  const subnet = `${prefix}.${Deno.pid % 200 + 20}`;
  const natOf = (i: number) =>
    typeof options.nat === "function" ? options.nat(i) : options.nat === true;
  const bridge = `pb${tag}`;
  const made: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    for (const undo of made.reverse()) await undo().catch(() => {});
  };
  const hosts: NetnsHost[] = [];
  const outside: string[] = [];
  try {
    await run(IP, ["link", "add", bridge, "type", "bridge"]);
    made.push(() => run(IP, ["link", "del", bridge]));
    await run(IP, ["addr", "add", `${subnet}.1/24`, "dev", bridge]);
    await run(IP, ["link", "set", bridge, "up"]);
    for (let i = 0; i < options.hosts; i++) {
      const netns = `psy${tag}h${i}`;
      // With `nat`, the router's namespace is the one on the bridge; the host is behind it.
      const nat = natOf(i);
      const edge = nat ? `psy${tag}r${i}` : netns;
      const near = `pv${tag}h${i}`;
      const far = `pw${tag}h${i}`;
      const publicAddress = `${subnet}.${10 + i}`;
      await run(IP, ["netns", "add", edge]);
      made.push(() => run(IP, ["netns", "del", edge]));
      await run(IP, ["link", "add", near, "type", "veth", "peer", "name", far]);
      made.push(() => run(IP, ["link", "del", near]));
      await run(IP, ["link", "set", far, "netns", edge]);
      await run(IP, ["link", "set", near, "master", bridge]);
      await run(IP, ["link", "set", near, "up"]);
      await run(IP, ["-n", edge, "addr", "add", `${publicAddress}/24`, "dev", far]);
      await run(IP, ["-n", edge, "link", "set", far, "up"]);
      await run(IP, ["-n", edge, "link", "set", "lo", "up"]);
      const rate = typeof options.rate === "function" ? options.rate(i) : options.rate;
      if (rate !== undefined) {
        // A token bucket each way: toward the host on the bridge side, from it inside.
        const burst = `${tbfBurstBytes(rate)}b`;
        const tbf = ["root", "tbf", "rate", rate, "burst", burst, "latency", "400ms"];
        await run(TC, ["qdisc", "add", "dev", near, ...tbf]);
        await run(IP, ["netns", "exec", edge, TC, "qdisc", "add", "dev", far, ...tbf]);
      }
      let address = publicAddress;
      if (nat) {
        // The host on a private link to its router (both ends die with the namespaces).
        const lan = `pr${tag}h${i}`;
        const inner = `ph${tag}h${i}`;
        const privateNet = `10.78.${i + 1}`;
        address = `${privateNet}.2`;
        await run(IP, ["-n", edge, "route", "add", "default", "via", `${subnet}.1`]);
        await run(IP, ["netns", "add", netns]);
        made.push(() => run(IP, ["netns", "del", netns]));
        const veth = ["link", "add", lan, "type", "veth", "peer", "name", inner, "netns", netns];
        await run(IP, ["-n", edge, ...veth]);
        await run(IP, ["-n", edge, "addr", "add", `${privateNet}.1/24`, "dev", lan]);
        await run(IP, ["-n", edge, "link", "set", lan, "up"]);
        await run(IP, ["-n", netns, "addr", "add", `${address}/24`, "dev", inner]);
        await run(IP, ["-n", netns, "link", "set", inner, "up"]);
        await run(IP, ["-n", netns, "link", "set", "lo", "up"]);
        await run(IP, ["-n", netns, "route", "add", "default", "via", `${privateNet}.1`]);
        const forward = "echo 1 > /proc/sys/net/ipv4/ip_forward";
        await run(IP, ["netns", "exec", edge, "/bin/sh", "-c", forward]);
        await run(IP, ["netns", "exec", edge, NFT, homeRouterRules(far)]);
      }
      hosts.push({ netns, address, publicAddress, router: nat ? edge : undefined });
      outside.push(near);
    }
  } catch (e) {
    await cleanup();
    throw e;
  }
  const link = (index: number, state: "up" | "down") => {
    const near = outside[index];
    if (near === undefined) throw new RangeError(`no host ${index}`);
    return run(IP, ["link", "set", near, state]);
  };
  let blocking = false;
  const blockPort = async (port: number, how: { silently?: boolean } = {}) => {
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new RangeError(`port must be in 1..65535, found ${port}`);
    }
    const table = `psyblock${tag}`;
    if (!blocking) {
      await run(NFT, [
        `table inet ${table} {
  chain input {
    type filter hook input priority filter; policy accept;
  }
  chain output {
    type filter hook output priority filter; policy accept;
  }
}`,
      ]);
      made.push(() => run(NFT, ["delete", "table", "inet", table]));
      blocking = true;
    }
    if (how.silently) {
      await run(NFT, [`add rule inet ${table} input iifname "${bridge}" tcp dport ${port} drop`]);
      await run(NFT, [`add rule inet ${table} output oifname "${bridge}" tcp sport ${port} drop`]);
      return;
    }
    await run(NFT, [
      `add rule inet ${table} input iifname "${bridge}" tcp dport ${port} reject with tcp reset`,
    ]);
  };
  return {
    gateway: `${subnet}.1`,
    hosts,
    cut: (index) => link(index, "down"),
    mend: (index) => link(index, "up"),
    blockPort,
    [Symbol.asyncDispose]: cleanup,
  };
}
