import assert from "node:assert/strict";
import { parseSolanaArgs } from "./args.ts";
import { UsageError } from "../../../common/mod.ts";
import { DEFAULT_PROGRAM_ID, DEFAULT_RPC_URL, DEFAULT_TREASURER_PROGRAM_ID } from "../rpc/mod.ts";

const W = ["--wallet-private-key-path", "w.json"];
const KEY = "11111111111111111111111111111111";

Deno.test("commands parse into typed options with the defaults", () => {
  const create = parseSolanaArgs(["create-run", "--run-id", "r", "--permissionless", ...W]);
  assert.deepEqual(create, {
    command: "create-run",
    runId: "r",
    joinAuthority: null,
    permissionless: true,
    meetingAddresses: [],
    common: {
      rpc: DEFAULT_RPC_URL,
      walletPath: "w.json",
      programId: DEFAULT_PROGRAM_ID,
      mainAuthority: null,
      coordinator: null,
    },
  });
  const pause = parseSolanaArgs(["set-paused", "--run-id", "r", "pause", ...W]);
  assert.equal(pause.command === "set-paused" && pause.paused, true);
  const delegate = parseSolanaArgs([
    "join-authorization",
    "delegate",
    "--run-id",
    "r",
    "--delegate",
    KEY,
    "--delegate",
    DEFAULT_PROGRAM_ID,
    ...W,
  ]);
  assert.ok(delegate.command === "join-authorization-delegate");
  assert.deepEqual(delegate.delegates, [KEY, DEFAULT_PROGRAM_ID]);
  const dump = parseSolanaArgs(["json-dump-run", "--run-id", "r", "--main-authority", KEY]);
  assert.equal(dump.common.mainAuthority, KEY);
  assert.equal(dump.common.walletPath, null, "reading needs no wallet");
});

Deno.test("bad command lines name what is wrong", () => {
  const bad: [string[], RegExp][] = [
    [["launch"], /unknown command "launch"/],
    [["tick", ...W], /tick needs --run-id ID/],
    [["tick", "--run-id", "r"], /tick needs --wallet-private-key-path FILE/],
    [["tick", "--run-id", "x".repeat(33), ...W], /--run-id is 33 bytes, at most 32/],
    [["create-run", "--run-id", "r\u202Eun", ...W], /--run-id contains U\+202E at character 2/],
    [["tick", "--run-id", "r\n", ...W], /--run-id contains U\+000A/],
    [["set-paused", "--run-id", "r", "stop", ...W], /pause or resume, found "stop"/],
    [["create-run", "--run-id", "r", "--join-authority", "0xabc", ...W], /--join-authority/],
    [["join-authorization", "--run-id", "r", ...W], /create or delegate, found nothing/],
    [["join-authorization", "delegate", "--run-id", "r", ...W], /--delegate PUBKEY/],
    [["update-config", "--run-id", "r", ...W], /--config-path state.toml, a metadata flag/],
    [["update-config", "--run-id", "r", "--vocab-size", "1e3", ...W], /--vocab-size must be/],
    [["tick", "--run-id", "r", "--bogus", ...W], /bogus/],
    [["tick", "--run-id", "r", "--rpc", "nope", ...W], /--rpc must be a URL, found "nope"/],
    [["airdrop", "--lamports", "1.5", ...W], /whole number/],
  ];
  for (const [argv, message] of bad) {
    assert.throws(() => parseSolanaArgs(argv), (e) => {
      assert.ok(e instanceof UsageError, `${argv.join(" ")}: ${e}`);
      assert.match(e.message, message);
      return true;
    });
  }
});

const PEER = "12D3KooWHFrmLWTTDD4NodngtRMEVYgxrsDMp4F9iSwYntZ9WjHa";
const RELAY = `/ip4/203.0.113.7/tcp/4001/p2p/${PEER}`;

Deno.test("--relay and --bootstrap-peer name where a run's clients meet, relays first", () => {
  const create = parseSolanaArgs([
    "create-run",
    "--run-id",
    "r",
    "--bootstrap-peer",
    `/dns4/a.example/tcp/1/p2p/${PEER}`,
    "--relay",
    RELAY,
    ...W,
  ]);
  assert.ok(create.command === "create-run");
  assert.deepEqual(create.meetingAddresses, [
    { kind: "Relay", address: RELAY },
    { kind: "Bootstrap", address: `/dns4/a.example/tcp/1/p2p/${PEER}` },
  ]);
  const update = (...flags: string[]) =>
    parseSolanaArgs(["update-config", "--run-id", "r", ...flags, ...W]);
  const set = update("--relay", RELAY);
  assert.ok(set.command === "update-config");
  assert.deepEqual(set.meetingAddresses, [{ kind: "Relay", address: RELAY }]);
  assert.equal(set.configPath, null);
  const clear = update("--clear-meeting-addresses");
  assert.ok(clear.command === "update-config");
  assert.deepEqual(clear.meetingAddresses, [], "an empty list clears them");
  const keep = update("--name", "n");
  assert.ok(keep.command === "update-config");
  assert.equal(keep.meetingAddresses, null, "no flag: the run's list is kept");

  const bad: [string[], RegExp][] = [
    [
      ["--relay", "/ip4/203.0.113.7/tcp/4001"],
      /--relay "\/ip4\/203\.0\.113\.7\/tcp\/4001" must end in \/p2p\/<peer id>/,
    ],
    [["--bootstrap-peer", `/dns4/é/p2p/${PEER}`], /--bootstrap-peer ".*" has byte 0xc3 at 6/],
    [["--relay", `/dns4/${"a".repeat(190)}/p2p/${PEER}`], /--relay ".*" is 253 bytes, at most 192/],
    [
      [
        "--relay",
        RELAY,
        "--relay",
        RELAY,
        "--relay",
        RELAY,
        "--bootstrap-peer",
        RELAY,
        "--relay",
        RELAY,
      ],
      /--relay and --bootstrap-peer name 5 addresses, at most 4 allowed/,
    ],
    [["--relay", RELAY, "--clear-meeting-addresses"], /--clear-meeting-addresses removes them all/],
  ];
  for (const [flags, message] of bad) {
    assert.throws(() => update(...flags), (e) => {
      assert.ok(e instanceof UsageError, `${flags.join(" ")}: ${e}`);
      assert.match(e.message, message);
      return true;
    });
  }
  assert.throws(() => parseSolanaArgs(["tick", "--run-id", "r", "--relay", RELAY, ...W]), {
    message: "tick takes no --relay",
  });
});

Deno.test("set-future-epoch-rates: each rate optional, at least one, u64 only", () => {
  const rates = (...flags: string[]) =>
    parseSolanaArgs(["set-future-epoch-rates", "--run-id", "r", ...flags, ...W]);
  const both = rates(
    "--earning-rate-total-shared",
    "18446744073709551615",
    "--slashing-rate-per-client",
    "0",
  );
  assert.ok(both.command === "set-future-epoch-rates");
  assert.equal(both.earningRateTotalShared, 0xffff_ffff_ffff_ffffn);
  assert.equal(both.slashingRatePerClient, 0n);
  const one = rates("--slashing-rate-per-client", "7");
  assert.ok(one.command === "set-future-epoch-rates");
  assert.equal("earningRateTotalShared" in one, false, "a rate not given is kept on chain");
  assert.equal(one.slashingRatePerClient, 7n);
  const bad: [string[], RegExp][] = [
    [[], /needs --earning-rate-total-shared N, --slashing-rate-per-client N, or both/],
    [["--earning-rate-total-shared", "18446744073709551616"], /up to 2\^64 - 1, found/],
    [["--earning-rate-total-shared", "-1"], /--earning-rate-total-shared must be a whole number/],
    [["--slashing-rate-per-client", "1e3"], /--slashing-rate-per-client must be a whole number/],
  ];
  for (const [flags, message] of bad) {
    assert.throws(() => rates(...flags), (e) => {
      assert.ok(e instanceof UsageError, `${flags.join(" ")}: ${e}`);
      assert.match(e.message, message);
      return true;
    });
  }
  assert.throws(
    () =>
      parseSolanaArgs([
        "set-future-epoch-rates",
        "--run-id",
        "r",
        "--earning-rate-total-shared",
        "1",
      ]),
    /needs --wallet-private-key-path FILE/,
  );
  assert.throws(
    () => parseSolanaArgs(["tick", "--run-id", "r", "--earning-rate-total-shared", "1", ...W]),
    { message: "tick takes no --earning-rate-total-shared" },
  );
});

Deno.test("each command takes its own flags; PSYCHE_* variables fill the rest", () => {
  assert.throws(() => parseSolanaArgs(["tick", "--run-id", "r", "--spill", KEY, ...W]), {
    message: "tick takes no --spill",
  });
  assert.throws(
    () => parseSolanaArgs(["tick", "--run-idd", "r", ...W]),
    /unknown flag --run-idd \(did you mean --run-id\?\)/,
  );
  assert.throws(() => parseSolanaArgs(["tikc"]), /unknown command "tikc" \(did you mean tick\?\)/);
  assert.deepEqual(parseSolanaArgs(["tick", "-h"]), {
    command: "help",
    topic: "tick",
    common: {
      rpc: DEFAULT_RPC_URL,
      walletPath: null,
      programId: DEFAULT_PROGRAM_ID,
      mainAuthority: null,
      coordinator: null,
    },
  });
  const env = {
    PSYCHE_RUN_ID: "r",
    PSYCHE_WALLET_PRIVATE_KEY_PATH: "w.json",
    PSYCHE_RPC: "http://10.0.0.1:8899",
  };
  const tick = parseSolanaArgs(["tick"], env);
  assert.ok(tick.command === "tick");
  assert.equal(tick.runId, "r");
  assert.equal(tick.common.walletPath, "w.json");
  assert.equal(tick.common.rpc, "http://10.0.0.1:8899");
  assert.throws(
    () => parseSolanaArgs(["tick"], { ...env, PSYCHE_RPC: "nope" }),
    /--rpc must be a URL, found "nope" \(PSYCHE_RPC is set in the environment\)/,
  );
});

Deno.test("set-join-deposit, withdraw-deposit, sweep-forfeited: mint and amount checked", () => {
  const set = parseSolanaArgs([
    "set-join-deposit",
    "--run-id",
    "r",
    "--mint",
    KEY,
    "--amount",
    "18446744073709551615",
    ...W,
  ]);
  assert.ok(set.command === "set-join-deposit");
  assert.equal(set.mint, KEY);
  assert.equal(set.amount, 0xffff_ffff_ffff_ffffn);
  const off = parseSolanaArgs([
    "set-join-deposit",
    "--run-id",
    "r",
    "--mint",
    KEY,
    "--amount",
    "0",
    ...W,
  ]);
  assert.ok(off.command === "set-join-deposit" && off.amount === 0n);
  const bad: [string[], RegExp][] = [
    [["--mint", KEY], /--amount/],
    [["--amount", "5"], /--mint/],
    [["--mint", KEY, "--amount", "18446744073709551616"], /--amount must be a whole number up to/],
    [["--mint", KEY, "--amount", "-1"], /--amount must be a whole number/],
    [["--mint", "not-a-key", "--amount", "1"], /--mint must be a base58 public key/],
  ];
  for (const [flags, message] of bad) {
    assert.throws(
      () => parseSolanaArgs(["set-join-deposit", "--run-id", "r", ...flags, ...W]),
      (e) => {
        assert.ok(e instanceof UsageError, `${flags.join(" ")}: ${e}`);
        assert.match(e.message, message);
        return true;
      },
    );
  }
  for (const command of ["withdraw-deposit", "sweep-forfeited"] as const) {
    const plain = parseSolanaArgs([command, "--run-id", "r", ...W]);
    assert.ok(plain.command === command && plain.tokenAccount === null);
    const to = parseSolanaArgs([command, "--run-id", "r", "--token-account", KEY, ...W]);
    assert.ok(to.command === command && to.tokenAccount === KEY);
    assert.throws(
      () => parseSolanaArgs([command, "--run-id", "r"]),
      /needs --wallet-private-key-path/,
    );
    assert.throws(
      () => parseSolanaArgs([command, "--run-id", "r", "--token-account", "x", ...W]),
      /--token-account must be a base58 public key/,
    );
  }
  assert.throws(() => parseSolanaArgs(["tick", "--run-id", "r", "--mint", KEY, ...W]), {
    message: "tick takes no --mint",
  });
});

Deno.test("the reads parse: text by default, --json, --wallet, no wallet key needed", () => {
  const list = parseSolanaArgs(["list-runs"]);
  assert.deepEqual(list, {
    command: "list-runs",
    json: false,
    common: {
      rpc: DEFAULT_RPC_URL,
      walletPath: null,
      programId: DEFAULT_PROGRAM_ID,
      mainAuthority: null,
      coordinator: null,
    },
  });
  assert.equal(parseSolanaArgs(["list-runs", "--json"]).command === "list-runs", true);
  const show = parseSolanaArgs(["show-run", "--run-id", "r", "--json", "--coordinator", KEY]);
  assert.ok(show.command === "show-run" && show.json && show.common.coordinator === KEY);
  const user = parseSolanaArgs(["json-dump-user", "--run-id", "r", "--wallet", KEY]);
  assert.ok(user.command === "json-dump-user");
  assert.equal(user.json, true, "json-dump-user always prints JSON");
  assert.equal(user.wallet, KEY);
  assert.equal(user.treasurerProgramId, DEFAULT_TREASURER_PROGRAM_ID);
  const human = parseSolanaArgs(["show-user", "--run-id", "r", ...W]);
  assert.ok(human.command === "show-user" && !human.json && human.wallet === null);
  const can = parseSolanaArgs([
    "can-join",
    "--run-id",
    "r",
    "--wallet",
    KEY,
    "--deposit-token-account",
    DEFAULT_PROGRAM_ID,
    "--json",
  ]);
  assert.ok(can.command === "can-join");
  assert.equal(can.depositTokenAccount, DEFAULT_PROGRAM_ID);
  assert.equal(can.json, true);
});

Deno.test("the reads' bad command lines name the flag", () => {
  const bad: [string[], RegExp][] = [
    [["show-run"], /show-run needs --run-id ID/],
    [["can-join", "--wallet", KEY], /can-join needs --run-id ID/],
    [["can-join", "--run-id", "r", "--wallet", "0xabc"], /--wallet must be a base58 public key/],
    [
      ["can-join", "--run-id", "r", "--deposit-token-account", "nope"],
      /--deposit-token-account must be a base58 public key, found "nope"/,
    ],
    [["json-dump-user", "--run-id", "r", "--json"], /json-dump-user takes no --json/],
    [["json-dump-run", "--run-id", "r", "--json"], /json-dump-run takes no --json/],
    [["list-runs", "--run-id", "r"], /list-runs takes no --run-id/],
    [["list-runs", "extra"], /unexpected argument "extra"/],
    [["show-user", "--run-id", "r", "--treasurer-program-id", "x"], /--treasurer-program-id/],
    [["tick", "--run-id", "r", "--json", ...W], /tick takes no --json/],
  ];
  for (const [argv, want] of bad) {
    assert.throws(
      () => parseSolanaArgs(argv),
      (e) => e instanceof UsageError && want.test(e.message),
      argv.join(" "),
    );
  }
});
