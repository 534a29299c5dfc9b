/**
 * Hosts on a real network, for tests of what crosses one: each client gets its own Linux
 * network namespace, joined to a bridge in the test's namespace by a veth pair, with its own
 * address on 10.77.x.0/24 (not 127.0.0.1), and a link that can be slowed (a token-bucket rate
 * limit each way) or cut and mended while the run goes on.
 *
 * Needs root and iproute2 (`ip`, `tc`). Everything is named after the test process, so two
 * tests never share a namespace, and `dispose` removes it all.
 *
 * @module
 */

/** One client's host: where it runs and the address peers reach it at. */
export interface NetnsHost {
  /** The network namespace the client runs in (`ip netns exec <netns>`). */
  readonly netns: string;
  /** Its address on the test network. */
  readonly address: string;
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
}

/** Options of {@link createTestNetwork}. */
export interface TestNetworkOptions {
  readonly hosts: number;
  /** Rate limit of every host's link, each way, e.g. `"2mbit"` (default: none). */
  readonly rate?: string;
}

/** The `ip` binary (the children run with a cleared environment, so no PATH lookup). */
export const IP = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].find(exists) ?? "ip";
const TC = ["/usr/sbin/tc", "/sbin/tc", "/usr/bin/tc", "/bin/tc"].find(exists) ?? "tc";

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Why this machine cannot make test networks, or null when it can. */
export function testNetworkUnavailable(): string | null {
  if (Deno.uid() !== 0) return "network namespaces need root";
  if (!exists(IP)) return "iproute2's ip is not installed";
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
 * Creates the bridge and `hosts` namespaces. On failure, what was made is removed before the
 * error is thrown.
 */
export async function createTestNetwork(options: TestNetworkOptions): Promise<TestNetwork> {
  const tag = `${Deno.pid % 100_000}`;
  const subnet = `10.77.${Deno.pid % 200 + 20}`;
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
      const near = `pv${tag}h${i}`;
      const far = `pw${tag}h${i}`;
      const address = `${subnet}.${10 + i}`;
      await run(IP, ["netns", "add", netns]);
      made.push(() => run(IP, ["netns", "del", netns]));
      await run(IP, ["link", "add", near, "type", "veth", "peer", "name", far]);
      made.push(() => run(IP, ["link", "del", near]));
      await run(IP, ["link", "set", far, "netns", netns]);
      await run(IP, ["link", "set", near, "master", bridge]);
      await run(IP, ["link", "set", near, "up"]);
      await run(IP, ["-n", netns, "addr", "add", `${address}/24`, "dev", far]);
      await run(IP, ["-n", netns, "link", "set", far, "up"]);
      await run(IP, ["-n", netns, "link", "set", "lo", "up"]);
      if (options.rate !== undefined) {
        // A token bucket each way: toward the host on the bridge side, from it inside.
        const burst = `${tbfBurstBytes(options.rate)}b`;
        const tbf = ["root", "tbf", "rate", options.rate, "burst", burst, "latency", "400ms"];
        await run(TC, ["qdisc", "add", "dev", near, ...tbf]);
        await run(IP, ["netns", "exec", netns, TC, "qdisc", "add", "dev", far, ...tbf]);
      }
      hosts.push({ netns, address });
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
  return {
    gateway: `${subnet}.1`,
    hosts,
    cut: (index) => link(index, "down"),
    mend: (index) => link(index, "up"),
    [Symbol.asyncDispose]: cleanup,
  };
}
