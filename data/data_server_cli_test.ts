import assert from "node:assert/strict";
import {
  dataServerLimitsFromRun,
  defaultRateLimit,
  parseDataServerArgs,
} from "./data_server_cli.ts";
import { toHex, UsageError } from "../common/mod.ts";
import { identityFromSecretKey } from "../net/mod.ts";

/** A real ed25519 public key (weak or malformed ones are refused). */
const KEY = toHex(identityFromSecretKey(new Uint8Array(32).fill(3)).publicKey);

Deno.test("data-server arguments: every flag parsed, defaults left to the server", () => {
  assert.deepEqual(
    parseDataServerArgs([
      "--config",
      "d.toml",
      "--state",
      "s.toml",
      "--allow",
      KEY,
      "--allow",
      KEY.toUpperCase(),
      "--port",
      "20001",
      "--hostname",
      "0.0.0.0",
      "--max-sequences-per-second",
      "2.5",
      "--max-connections",
      "10",
      "--max-connections-per-address",
      "3",
      "--idle-timeout",
      "0.5",
    ]),
    {
      configPath: "d.toml",
      statePath: "s.toml",
      maxBatchSequences: undefined,
      allow: new Set([KEY]),
      port: 20001,
      hostname: "0.0.0.0",
      sequencesPerSecond: 2.5,
      maxConnections: 10,
      maxConnectionsPerAddress: 3,
      idleTimeoutMs: 500,
    },
  );
  const minimal = parseDataServerArgs([
    "--config",
    "d.toml",
    "--max-batch-sequences",
    "6",
    "--allow-any-client",
  ]);
  assert.ok(minimal !== "help");
  assert.equal(minimal.allow, "any");
  assert.equal(minimal.hostname, "127.0.0.1");
  assert.equal(minimal.port, undefined);
  assert.equal(parseDataServerArgs(["-h"]), "help");
});

Deno.test("data-server arguments: mistakes are refused naming the flag", () => {
  const base = ["--config", "d.toml", "--max-batch-sequences", "6"];
  const bad = (args: string[], message: RegExp) =>
    assert.throws(
      () => parseDataServerArgs(args),
      (e) => e instanceof UsageError && message.test(e.message),
    );
  bad(["--max-batch-sequences", "6", "--allow-any-client"], /--config FILE is required/);
  bad(["--config", "d.toml", "--allow-any-client"], /--state FILE .* or --max-batch-sequences N/);
  bad(base, /name the clients to serve with --allow/);
  bad([...base, "--allow", KEY, "--allow-any-client"], /exclude each other/);
  bad([...base, "--allow", "xyz"], /--allow must be a 64-digit hex public key, found "xyz"/);
  bad([...base, "--allow-any-client", "--port", "70000"], /--port must be an integer in 0..65535/);
  bad(
    ["--config", "d", "--max-batch-sequences", "0", "--allow-any-client"],
    /--max-batch-sequences must be an integer >= 1, found "0"/,
  );
  bad([...base, "--allow-any-client", "--idle-timeout", "0"], /--idle-timeout must be 0 < S/);
  bad([...base, "--allow-any-client", "--max-sequences-per-second=-1"], /must be > 0/);
  bad([...base, "--allow-any-client", "--bogus"], /bogus/);
});

Deno.test("a run config gives the largest batch and its data server's port", () => {
  const run = (start: number, end: number, address: string | null) => ({
    config: { globalBatchSizeStart: start, globalBatchSizeEnd: end },
    model: {
      dataLocation: address === null
        ? { kind: "Dummy" as const }
        : { kind: "Server" as const, address },
    },
  });
  const limits = dataServerLimitsFromRun;
  assert.deepEqual(limits(run(4, 16, "127.0.0.1:20001")), { maxBatchSequences: 16, port: 20001 });
  assert.deepEqual(limits(run(6, 6, null)), { maxBatchSequences: 6 });
  assert.deepEqual(defaultRateLimit(6), { sequencesPerSecond: 6, burstSequences: 12 });
  assert.deepEqual(defaultRateLimit(6, 1), { sequencesPerSecond: 1, burstSequences: 12 });
});
