import assert from "node:assert/strict";
import { parseRunArgs, runCommand } from "./run_command.ts";
import type { CliIo } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";
import { generateIdentity } from "../../net/mod.ts";
import { TcpBackend } from "../../client/backend/mod.ts";

function captureIo(files: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    readTextFile: (path) =>
      path in files ? Promise.resolve(files[path]) : Promise.reject(new Error("No such file")),
    isDirectory: () => Promise.resolve(false),
    out: (line) => out.push(line),
    err: (line) => err.push(line),
  };
  return { io, out, err };
}

Deno.test("run options: defaults, every flag, and help", () => {
  assert.deepEqual(parseRunArgs(["--state", "s.toml"]), {
    statePath: "s.toml",
    port: 0,
    hostname: "0.0.0.0",
    dataConfigPath: undefined,
    saveStateDir: undefined,
    initWarmupTime: undefined,
    withdrawOnDisconnect: true,
    logs: "console",
    authorizedKeysPath: undefined,
    maxConnections: undefined,
    maxConnectionsPerAddress: undefined,
    idleTimeout: undefined,
    joinBackoffEpochs: undefined,
    relayPort: undefined,
    relayAnnounce: undefined,
    dashboardPort: undefined,
    dashboardHostname: "127.0.0.1",
  });
  assert.deepEqual(
    parseRunArgs([
      "--state=s.toml",
      "--server-port",
      "4000",
      "--data-config",
      "d.toml",
      "--save-state-dir",
      "out",
      "--init-warmup-time",
      "60",
      "--withdraw-on-disconnect",
      "false",
      "--logs",
      "json",
      "--authorized-keys",
      "keys.txt",
      "--max-connections",
      "512",
      "--max-connections-per-address",
      "64",
      "--idle-timeout",
      "2.5",
      "--join-backoff-epochs",
      "0",
      "--relay-port",
      "4001",
      "--relay-announce",
      "/ip4/203.0.113.7/tcp/4001",
      "--relay-announce",
      "/dns4/relay.example.org/tcp/443",
      "--dashboard-port",
      "20003",
      "--dashboard-hostname",
      "0.0.0.0",
    ]),
    {
      statePath: "s.toml",
      port: 4000,
      hostname: "0.0.0.0",
      dataConfigPath: "d.toml",
      saveStateDir: "out",
      initWarmupTime: 60,
      withdrawOnDisconnect: false,
      logs: "json",
      authorizedKeysPath: "keys.txt",
      maxConnections: 512,
      maxConnectionsPerAddress: 64,
      idleTimeout: 2.5,
      joinBackoffEpochs: 0,
      relayPort: 4001,
      relayAnnounce: ["/ip4/203.0.113.7/tcp/4001", "/dns4/relay.example.org/tcp/443"],
      dashboardPort: 20003,
      dashboardHostname: "0.0.0.0",
    },
  );
  assert.equal(parseRunArgs(["-h"]), null);
  assert.equal(parseRunArgs(["--state", "s", "--relay"])?.relayPort, 0, "--relay: any free port");
  assert.equal(
    parseRunArgs(["--state", "s", "--relay-announce", "/ip4/1.2.3.4/tcp/5"])?.relayPort,
    0,
    "--relay-announce implies --relay",
  );
  for (const bad of ["1.2.3.4:5", "/ip4/1.2.3.4/tcp/5/p2p/12D3KooWx", "/ip4/1.2.3.4/udp/5"]) {
    assert.throws(
      () => parseRunArgs(["--state", "s", "--relay-announce", bad]),
      new RegExp(`--relay-announce must be a TCP multiaddr.*found "${bad}"`),
    );
  }
});

Deno.test("run options: Psyche's -s for --server-port, and PSYCHE_* variables", () => {
  assert.equal(parseRunArgs(["--state", "s", "-s", "4001"])?.port, 4001);
  assert.equal(parseRunArgs(["--state", "s", "-s4002"])?.port, 4002);
  const env = { PSYCHE_STATE: "e.toml", PSYCHE_SERVER_PORT: "4003", PSYCHE_LOGS: "json" };
  const fromEnv = parseRunArgs([], env);
  assert.equal(fromEnv?.statePath, "e.toml");
  assert.equal(fromEnv?.port, 4003);
  assert.equal(fromEnv?.logs, "json");
  assert.equal(parseRunArgs(["-s", "4004"], env)?.port, 4004, "the command line wins");
  assert.throws(
    () => parseRunArgs([], { ...env, PSYCHE_SERVER_PORT: "x" }),
    /--server-port must be .* \(PSYCHE_SERVER_PORT is set in the environment\)/,
  );
  assert.throws(
    () => parseRunArgs(["--state", "s", "--sever-port", "1"]),
    /unknown flag --sever-port \(did you mean --server-port\?\)/,
  );
});

Deno.test("run options: bad values name the option and what was found", () => {
  const cases: [string[], RegExp][] = [
    [[], /--state FILE is required/],
    [
      ["--state", "s", "--server-port", "70000"],
      /--server-port must be a whole number in 0..65535, found "70000"/,
    ],
    [["--state", "s", "--init-warmup-time", "0"], /--init-warmup-time \(seconds\) must be > 0/],
    [
      ["--state", "s", "--init-warmup-time", "1.0005"],
      /--init-warmup-time \(seconds\) must be a whole number of milliseconds/,
    ],
    [["--state", "s", "--init-warmup-time", "-3"], /--init-warmup-time/],
    [["--state", "s", "--init-warmup-time", "1e3"], /expected a finite number of seconds/],
    [["--state", "s", "--withdraw-on-disconnect", "yes"], /must be true or false, found "yes"/],
    [["--state", "s", "--logs", "tui"], /--logs must be one of console, json, found "tui"/],
    [["--state", "s", "--bogus"], /bogus/],
    [
      ["--state", "s", "--max-connections-per-address", "0"],
      /--max-connections-per-address must be a whole number in 1..1000000, found "0"/,
    ],
    [["--state", "s", "--idle-timeout", "0"], /--idle-timeout \(seconds\) must be > 0/],
    [["--state", "s", "--join-backoff-epochs=-1"], /--join-backoff-epochs must be a whole/],
    [["--state", "s", "--dashboard-port", "http"], /--dashboard-port must be a whole number/],
  ];
  for (const [args] of cases) assert.throws(() => parseRunArgs(args), UsageError);
  for (const [args, message] of cases) assert.throws(() => parseRunArgs(args), message);
});

Deno.test("--init-warmup-time takes seconds with millisecond precision", () => {
  assert.equal(parseRunArgs(["--state", "s", "--init-warmup-time", "0.25"])?.initWarmupTime, 0.25);
  assert.equal(parseRunArgs(["--state", "s", "--init-warmup-time", "90"])?.initWarmupTime, 90);
});

Deno.test("run exits 2 on usage errors and unreadable files, 1 on invalid configs", async () => {
  let c = captureIo();
  assert.equal(await runCommand(["--logs", "x"], c.io), 2);
  assert.match(c.err.join("\n"), /--state FILE is required/);
  c = captureIo();
  assert.equal(await runCommand(["--state", "missing.toml"], c.io), 2);
  assert.match(c.err.join("\n"), /cannot read run config "missing.toml"/);
  c = captureIo({ "bad.toml": 'run_id = "x"' });
  assert.equal(await runCommand(["--state", "bad.toml"], c.io), 1);
  assert.match(c.err.join("\n"), /invalid: .*bad\.toml/);
  c = captureIo();
  assert.equal(await runCommand(["--help"], c.io), 0);
  assert.match(c.out.join("\n"), /--withdraw-on-disconnect/);
});

Deno.test("--data-config needs a run that reads from a data Server", async () => {
  const state = await Deno.readTextFile(
    new URL("../../config/llama-tiny/state.toml", import.meta.url),
  );
  const local = state.replace(/Server = "127\.0\.0\.1:20001"/, 'Local = "/data"');
  const c = captureIo({ "s.toml": local });
  assert.equal(await runCommand(["--state", "s.toml", "--data-config", "d.toml"], c.io), 2);
  assert.match(c.err.join("\n"), /data_location to be Server = "host:port", found Local/);
});

/** Runs `run` with `flag` naming a port another socket holds; returns what it said. */
async function runOnBusyPort(flag: string): Promise<{ code: number; err: string; port: number }> {
  const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (busy.addr as Deno.NetAddr).port;
  try {
    const state = await Deno.readTextFile(
      new URL("../../config/llama-tiny/state.toml", import.meta.url),
    );
    const c = captureIo({ "s.toml": state });
    const code = await runCommand(
      ["--state", "s.toml", "--hostname", "127.0.0.1", flag, String(port)],
      c.io,
      { stop: Promise.resolve() },
    );
    return { code, err: c.err.join("\n"), port };
  } finally {
    busy.close();
  }
}

Deno.test("a port in use is a usage error naming the address", async () => {
  const { code, err, port } = await runOnBusyPort("--server-port");
  assert.equal(code, 2);
  assert.match(err, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}`));
});

Deno.test("--authorized-keys: an unreadable file exits 2, a bad line exits 1 naming it", async () => {
  const state = await Deno.readTextFile(
    new URL("../../config/llama-tiny/state.toml", import.meta.url),
  );
  let c = captureIo({ "s.toml": state });
  assert.equal(await runCommand(["--state", "s.toml", "--authorized-keys", "none.txt"], c.io), 2);
  assert.match(c.err.join("\n"), /cannot read authorized keys "none.txt"/);
  c = captureIo({ "s.toml": state, "keys.txt": "# ok\nnope\n" });
  assert.equal(await runCommand(["--state", "s.toml", "--authorized-keys", "keys.txt"], c.io), 1);
  assert.match(c.err.join("\n"), /invalid: keys.txt, line 2: "nope" is not a public key/);
  c = captureIo();
  assert.equal(await runCommand(["--help"], c.io), 0);
  for (const flag of ["--authorized-keys", "--max-connections-per-address", "--idle-timeout"]) {
    assert.ok(c.out.join("\n").includes(flag), flag);
  }
});

Deno.test("--dashboard-port without a dashboard to start is a usage error", async () => {
  const state = await Deno.readTextFile(
    new URL("../../config/llama-tiny/state.toml", import.meta.url),
  );
  const c = captureIo({ "s.toml": state });
  const code = await runCommand(["--state", "s.toml", "--dashboard-port", "0"], c.io, {
    stop: Promise.resolve(),
  });
  assert.equal(code, 2);
  assert.match(c.err.join("\n"), /--dashboard-port: this build of the command has no dashboard/);
});

/** The first JSON line `c` printed for event `kind`, waiting up to 10 s for it. */
async function jsonEvent(c: ReturnType<typeof captureIo>, kind: string) {
  for (let i = 0; i < 500; i++) {
    const line = c.out.map((l) => JSON.parse(l)).find((e) => e.event === kind);
    if (line !== undefined) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no ${kind} event in ${c.out.join("\n")} ${c.err.join("\n")}`);
}

Deno.test("--relay serves a members-only relay and names it to every client that connects", async () => {
  const state = await Deno.readTextFile(
    new URL("../../config/llama-tiny/state.toml", import.meta.url),
  );
  const c = captureIo({ "s.toml": state });
  let stop = () => {};
  const stopped = new Promise<void>((resolve) => stop = resolve);
  const running = runCommand(
    ["--state", "s.toml", "--hostname", "127.0.0.1", "--relay", "--logs", "json"],
    c.io,
    { stop: stopped },
  );
  try {
    const event = (kind: string) => jsonEvent(c, kind);
    const relay = await event("relay");
    assert.match(relay.addresses[0], /^\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/12D3KooW/);
    const listening = await event("listening");
    const told: string[][] = [];
    const backend = await TcpBackend.connect({
      address: listening.address,
      runId: "llama-tiny-brown",
      identity: generateIdentity(),
      onEvent: (e) => {
        if (e.kind === "Relays") told.push(e.addresses);
      },
    });
    try {
      for (let i = 0; i < 250 && told.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.deepEqual(told, [relay.addresses]);
    } finally {
      await backend.close();
    }
  } finally {
    stop();
    assert.equal(await running, 0);
  }
});

Deno.test("--relay-announce: the relay names the announced address, not where it listens", async () => {
  const state = await Deno.readTextFile(
    new URL("../../config/llama-tiny/state.toml", import.meta.url),
  );
  const c = captureIo({ "s.toml": state });
  let stop = () => {};
  const stopped = new Promise<void>((resolve) => stop = resolve);
  const args = ["--state", "s.toml", "--hostname", "127.0.0.1", "--logs", "json"];
  const running = runCommand(
    [...args, "--relay-announce", "/ip4/203.0.113.7/tcp/4999"],
    c.io,
    { stop: stopped },
  );
  try {
    const relay = await jsonEvent(c, "relay");
    assert.equal(relay.addresses.length, 1);
    assert.match(relay.addresses[0], /^\/ip4\/203\.0\.113\.7\/tcp\/4999\/p2p\/12D3KooW/);
  } finally {
    stop();
    assert.equal(await running, 0);
  }
});

Deno.test("a relay port in use is a usage error naming it", async () => {
  const { code, err, port } = await runOnBusyPort("--relay-port");
  assert.equal(code, 2);
  assert.match(err, new RegExp(`relay: cannot listen on 127\\.0\\.0\\.1:${port}`));
});
