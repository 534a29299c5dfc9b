import assert from "node:assert/strict";
import { createTestNetwork, IP, tbfBurstBytes, testNetworkUnavailable } from "./netns.ts";

const unavailable = testNetworkUnavailable();

Deno.test("tbfBurstBytes: 20 ms of the rate, at least 4 KiB; other rates refused", () => {
  assert.equal(tbfBurstBytes("100mbit"), 250_000);
  assert.equal(tbfBurstBytes("2mbit"), 5_000);
  assert.equal(tbfBurstBytes("64kbit"), 4096);
  assert.equal(tbfBurstBytes("1.5gbit"), 3_750_000);
  assert.throws(() => tbfBurstBytes("2 Mbps"), /rate must look like 2mbit/);
});

async function ip(...args: string[]): Promise<string> {
  const out = await new Deno.Command(IP, { args, stdout: "piped", stderr: "piped" }).output();
  return new TextDecoder().decode(out.stdout);
}

const sleep = <T>(ms: number, value: T) => new Promise<T>((r) => setTimeout(() => r(value), ms));

Deno.test({
  name: "a test network: hosts in namespaces with their addresses, cut and mended, then gone",
  ignore: unavailable !== null,
  // The probe sent while the link is cut settles only after the test.
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  let names: string[] = [];
  {
    await using network = await createTestNetwork({ hosts: 2, rate: "2mbit" });
    names = network.hosts.map((h) => h.netns);
    const listed = await ip("netns", "list");
    for (const name of names) assert.match(listed, new RegExp(`^${name}\\b`, "m"));
    const inside = await ip("-n", names[1], "-4", "addr", "show");
    assert.match(inside, new RegExp(`inet ${network.hosts[1].address.replaceAll(".", "\\.")}/24`));
    assert.equal(network.hosts[1].publicAddress, network.hosts[1].address, "no router, no NAT");
    // A closed port answers with a refusal while the link is up, and with nothing once it is cut.
    const probe = () =>
      Deno.connect({ hostname: network.hosts[0].address, port: 47124 }).then(
        (c) => (c.close(), "connected"),
        (e: Error) => e.name,
      );
    const within = (ms: number) => Promise.race([probe(), sleep(ms, "no answer")]);
    assert.equal(await within(5000), "ConnectionRefused");
    await network.cut(0);
    assert.equal(await within(1500), "no answer");
    await network.mend(0);
    assert.equal(await within(5000), "ConnectionRefused");
  }
  const after = await ip("netns", "list");
  for (const name of names) assert.doesNotMatch(after, new RegExp(`^${name}\\b`, "m"));
});

const natUnavailable = testNetworkUnavailable({ nat: true });

/**
 * What a TCP dial from `netns` (the test's own namespace when null) gets within `ms`:
 * "connected", the error's name, or "no answer". A child process, so a dial left hanging dies
 * with it.
 */
async function dial(netns: string | null, hostname: string, port: number, ms = 2000) {
  const code = `const dial = Deno.connect({ hostname: "${hostname}", port: ${port} })
  .then((c) => (c.close(), "connected"), (e) => e.name);
const late = new Promise((r) => setTimeout(() => r("no answer"), ${ms}));
console.log(await Promise.race([dial, late]));
Deno.exit(0);`;
  const deno = [Deno.execPath(), "eval", code];
  const [program, ...args] = netns === null ? deno : [IP, "netns", "exec", netns, ...deno];
  const out = await new Deno.Command(program, {
    args,
    env: { DENO_NO_UPDATE_CHECK: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

/** A TCP listener on every interface of `netns`, accepting and closing, until disposed. */
async function listenIn(netns: string, port: number): Promise<AsyncDisposable> {
  const code = `const listener = Deno.listen({ hostname: "0.0.0.0", port: ${port} });
console.log("ready");
for await (const conn of listener) conn.close();`;
  const child = new Deno.Command(IP, {
    args: ["netns", "exec", netns, Deno.execPath(), "eval", code],
    env: { DENO_NO_UPDATE_CHECK: "1" },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const dispose = async () => {
    child.kill();
    await lines.cancel();
    await child.status;
  };
  let seen = "";
  while (!seen.includes("ready")) {
    const { value, done } = await lines.read();
    if (done) {
      await dispose();
      throw new Error(`the listener in ${netns} did not start`);
    }
    seen += value;
  }
  return { [Symbol.asyncDispose]: dispose };
}

Deno.test({
  name: "behind home routers: a host dials out from its router's address, and nothing dials in",
  ignore: natUnavailable !== null,
}, async () => {
  let names: string[] = [];
  {
    await using network = await createTestNetwork({ hosts: 2, nat: true, rate: "100mbit" });
    const [h0, h1] = network.hosts;
    names = network.hosts.flatMap((h) => [h.netns, h.router ?? ""]);
    assert.equal(h0.address, "10.78.1.2");
    assert.equal(h1.address, "10.78.2.2");
    assert.notEqual(h0.publicAddress, h0.address);
    assert.match(
      await ip("-n", h0.router!, "-4", "addr", "show"),
      new RegExp(
        `inet ${h0.publicAddress.replaceAll(".", "\\.")}/24`,
      ),
    );
    const qdiscs = await new Deno.Command(IP, {
      args: ["netns", "exec", h0.router!, "tc", "qdisc", "show"],
      stdout: "piped",
    }).output();
    assert.match(new TextDecoder().decode(qdiscs.stdout), /tbf .*rate 100Mbit/);

    // Out: the coordinator's side sees host 0 at its router's address.
    using listener = Deno.listen({ hostname: network.gateway, port: 0 });
    const accepted = listener.accept();
    assert.equal(await dial(h0.netns, network.gateway, listener.addr.port), "connected");
    const conn = await accepted;
    conn.close();
    assert.equal(conn.remoteAddr.hostname, h0.publicAddress);

    // In: host 1 listens on every interface; only host 1 itself reaches it.
    const port = 47125;
    await using _listening = await listenIn(h1.netns, port);
    assert.equal(await dial(h1.netns, h1.address, port), "connected");
    // Even routed straight at host 1's private subnet, its router drops what is dialled in.
    await ip("-n", h0.router!, "route", "add", "10.78.2.0/24", "via", h1.publicAddress);
    const tries = await Promise.all([
      dial(h0.netns, h1.address, port),
      dial(h0.netns, h1.publicAddress, port),
      dial(null, h1.address, port),
      dial(null, h1.publicAddress, port),
    ]);
    for (const got of tries) assert.notEqual(got, "connected", `tries: ${tries}`);
    assert.equal(tries[0], "no answer", "host 1's router drops a dial from outside");

    // Cut, host 0 reaches nothing; mended, it dials out again.
    await network.cut(0);
    assert.equal(await dial(h0.netns, network.gateway, listener.addr.port, 1000), "no answer");
    await network.mend(0);
    const again = listener.accept();
    assert.equal(await dial(h0.netns, network.gateway, listener.addr.port), "connected");
    (await again).close();
  }
  const after = await ip("netns", "list");
  for (const name of names) assert.doesNotMatch(after, new RegExp(`^${name}\\b`, "m"));
});
