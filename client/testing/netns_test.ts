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
