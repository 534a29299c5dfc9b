import assert from "node:assert/strict";
import { testConfig, testModel } from "../../tests/support/coordinator_fixtures.ts";
import { startTestRun, type TestRun } from "../../coordinator/solana/testing/localnet_run.ts";
import { COMPLIANCE_RUN_ID, describeBackendCompliance } from "../testing/backend_compliance.ts";
import {
  meetingChange,
  type MeetingPlaces,
  nextAccount,
  SolanaBackend,
  tickDue,
  tickProbability,
} from "./solana.ts";
import { BackendError } from "./backend.ts";
import { keypairJson, SolanaRpcClient } from "../../coordinator/solana/rpc/mod.ts";
import {
  associatedTokenAddress,
  decodeCoordinatorAccount,
} from "../../coordinator/solana/abi/mod.ts";
import { type Address, generateKeyPairSigner, getAddressDecoder } from "@solana/kit";
import { generateIdentity } from "../../net/mod.ts";
import { parseClientArgs } from "../cli.ts";
import { connectSolana } from "../main.ts";
import { writeTokenAt as writeToken } from "../../coordinator/solana/testing/litesvm_accounts.ts";

async function connect(
  run: TestRun,
  runId: string,
  extra: Partial<Parameters<typeof SolanaBackend.connect>[0]> = {},
) {
  const wallet = await run.newWallet();
  return await SolanaBackend.connect({
    rpcs: [run.rpc],
    wallet: wallet.signer,
    p2pIdentity: generateIdentity().publicKey,
    programId: run.net.ledger.programId,
    coordinator: run.coordinator,
    runId,
    tickIntervalMs: 100,
    ...extra,
  });
}

describeBackendCompliance("solana", async (options) => {
  // A verifying run's chain and backends share a clock the test moves (whole seconds).
  let nowMs = Math.floor(Date.now() / 1000) * 1000;
  const now = options.verifying ? () => nowMs : undefined;
  const run = await startTestRun({
    runId: COMPLIANCE_RUN_ID,
    config: options.verifying
      ? testConfig({ initMinClients: 3, minClients: 2, verificationPercent: 100 })
      : testConfig({ initMinClients: 2, minClients: 2, waitingForMembersExtraTime: 1 }),
    model: testModel(),
    now,
  });
  return {
    host: { pending: () => run.pending() },
    leavesOnClose: false,
    connect: (runId) => connect(run, runId, { now }),
    advance: (seconds) => nowMs += seconds * 1000,
    close: () => run.close(),
  };
});

Deno.test("tick lottery: always with two clients or fewer, else 2/len", () => {
  assert.equal(tickProbability(0), 1);
  assert.equal(tickProbability(2), 1);
  assert.equal(tickProbability(8), 0.25);
});

Deno.test("a tick is due only when the machine would change the state", async () => {
  await using run = await startTestRun({
    runId: "due",
    config: testConfig({ initMinClients: 1, minClients: 1, waitingForMembersExtraTime: 1 }),
    model: testModel(),
  });
  const read = async () => decodeCoordinatorAccount((await run.rpc.accountData(run.coordinator))!);
  const empty = await read();
  const start = empty.state.runStateStartUnixTimestamp;
  assert.equal(tickDue(empty, start + 100), false, "nobody pending");
  const backend = await connect(run, "due", { tickIntervalMs: 60_000 }); // no ticks of its own
  try {
    await backend.join();
    const account = await read();
    assert.equal(account.state.runState, "WaitingForMembers");
    assert.equal(tickDue(account, start), false, "the extra time has not passed");
    assert.equal(tickDue(account, start + 1), true, "one pending client, extra time over");
    assert.equal(account.state.runState, "WaitingForMembers", "the account is not touched");
    const paused = structuredClone(account);
    paused.state.runState = "Paused";
    assert.equal(tickDue(paused, start + 100), false, "a halted run never ticks");
  } finally {
    await backend.close();
  }
});

Deno.test("when the first RPC is down, reads and sends fall back to the second", async () => {
  await using run = await startTestRun({
    runId: "fallback",
    config: testConfig({ initMinClients: 2, minClients: 2 }),
    model: testModel(),
  });
  const dead = new SolanaRpcClient({
    url: "http://127.0.0.1:9",
    wsUrl: "ws://127.0.0.1:9",
    timeoutMs: 500,
  });
  const wallet = await run.newWallet();
  const retries: string[] = [];
  // The first RPC is down: the initial read and every send fall back to the second.
  const backend = await SolanaBackend.connect({
    rpcs: [dead, run.rpc],
    wallet: wallet.signer,
    p2pIdentity: generateIdentity().publicKey,
    programId: run.net.ledger.programId,
    coordinator: run.coordinator,
    runId: "fallback",
    attemptsPerRpc: 2,
    onEvent: (e) => {
      if (e.kind === "Retry") retries.push(e.rpc);
    },
  });
  try {
    const before = backend.account()!.nonce;
    await backend.join();
    assert.equal(run.pending().length, 1);
    assert.deepEqual(retries, ["http://127.0.0.1:9", "http://127.0.0.1:9"]);
    assert.ok(before >= 1n);
  } finally {
    await backend.close();
  }
});

Deno.test("a permissioned run refuses a wallet that is not authorized, for good", async () => {
  await using run = await startTestRun({
    runId: "closed",
    config: testConfig(),
    model: testModel(),
    permissionless: false,
  });
  const backend = await connect(run, "closed");
  try {
    await assert.rejects(
      backend.join(),
      (e) =>
        e instanceof BackendError && e.kind === "Refused" && /NotAuthorizedToJoin/.test(e.message),
    );
    await assert.rejects(backend.join(), (e) => e instanceof BackendError && e.kind === "Refused");
    assert.equal(run.pending().length, 0);
  } finally {
    await backend.close();
  }
});

Deno.test("only higher nonces are taken; another run or foreign bytes are final errors", async () => {
  await using run = await startTestRun({
    runId: "nonce",
    config: testConfig(),
    model: testModel(),
  });
  const expect = { runId: "nonce", coordinator: run.coordinator };
  const older = (await run.rpc.accountData(run.coordinator))!;
  await run.operator.update(run.coordinator, {
    metadata: { name: "n", description: "", numParameters: 1, vocabSize: 1 },
  });
  const newer = (await run.rpc.accountData(run.coordinator))!;
  const first = nextAccount(null, older, expect);
  assert.ok(first !== null && !(first instanceof BackendError));
  const second = nextAccount(first, newer, expect);
  assert.ok(second !== null && !(second instanceof BackendError));
  assert.equal(second.nonce, first.nonce + 1n);
  assert.equal(nextAccount(second, older, expect), null, "a stale notification is ignored");
  assert.equal(nextAccount(second, newer, expect), null, "the same nonce is not new");
  const other = nextAccount(null, older, { ...expect, runId: "else" });
  assert.ok(other instanceof BackendError && other.kind === "Refused");
  assert.match(other.message, /run id "else" does not match this coordinator's run "nonce"/);
  const junk = nextAccount(null, new Uint8Array(100), expect);
  assert.ok(junk instanceof BackendError && junk.kind === "Protocol");
});

Deno.test("the backend ticks the run forward and joins again for the next epoch", async () => {
  // One client that never reports: its ticks alone carry the run through an epoch
  // (WaitingForMembers -> Warmup ends its registration -> rounds -> the epoch times out),
  // and when the run waits again it registers again.
  await using run = await startTestRun({
    runId: "rejoin",
    config: testConfig({
      initMinClients: 1,
      minClients: 1,
      warmupTime: 1,
      epochTime: 3,
      maxRoundTrainTime: 1,
      roundWitnessTime: 1,
      cooldownTime: 1,
    }),
    model: testModel(),
  });
  const joined: number[] = [];
  const ticked: string[] = [];
  const backend = await connect(run, "rejoin", {
    onEvent: (e) => {
      if (e.kind === "Joined") joined.push(e.epoch);
      if (e.kind === "TickSent") ticked.push(e.runState);
    },
  });
  try {
    await backend.join();
    const deadline = Date.now() + 20_000;
    while (joined.length < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(joined.length >= 2, `joins: ${joined.length}, ticks from ${ticked.join(", ")}`);
    assert.ok(ticked.includes("WaitingForMembers"), "it started the epoch");
    assert.ok(ticked.includes("Warmup"), "it ended the warmup");
    assert.equal(backend.latest()?.progress.epoch, 1, "the second epoch's registration");
  } finally {
    await backend.close();
  }
});

const PEER = "12D3KooWHFrmLWTTDD4NodngtRMEVYgxrsDMp4F9iSwYntZ9WjHa";
const RELAY = `/ip4/203.0.113.7/tcp/4001/p2p/${PEER}`;
const BOOTSTRAP = `/dns4/peer.example.org/tcp/4001/p2p/${PEER}`;

Deno.test("meeting addresses: said once per list, none for a run that names none", async () => {
  await using run = await startTestRun({ runId: "meet", config: testConfig(), model: testModel() });
  const read = async () => decodeCoordinatorAccount((await run.rpc.accountData(run.coordinator))!);
  const none = await read();
  assert.equal(meetingChange(null, none), null, "a run without any asks nothing");
  await run.operator.update(run.coordinator, {
    meetingAddresses: [{ kind: "Bootstrap", address: BOOTSTRAP }, {
      kind: "Relay",
      address: RELAY,
    }],
  });
  const named = await read();
  assert.deepEqual(meetingChange(none, named), { relays: [RELAY], bootstrapPeers: [BOOTSTRAP] });
  assert.deepEqual(meetingChange(null, named), { relays: [RELAY], bootstrapPeers: [BOOTSTRAP] });
  assert.equal(meetingChange(named, named), null, "the same list again: nothing to do");
  await run.operator.update(run.coordinator, { meetingAddresses: [] });
  assert.deepEqual(meetingChange(named, await read()), { relays: [], bootstrapPeers: [] });
});

Deno.test("a client in Solana mode meets where the run's account says, with no flags", async () => {
  await using run = await startTestRun({
    runId: "meet-rpc",
    config: testConfig(),
    model: testModel(),
  });
  await run.operator.update(run.coordinator, {
    meetingAddresses: [{ kind: "Relay", address: RELAY }, {
      kind: "Bootstrap",
      address: BOOTSTRAP,
    }],
  });
  const dir = await Deno.makeTempDir({ prefix: "solana-meet-" });
  const wallet = await run.newWallet();
  const walletPath = `${dir}/client.json`;
  await Deno.writeTextFile(walletPath, keypairJson(wallet.identity));
  // `client train` as a volunteer types it: the RPC, a wallet and the run; no --relay
  // (--ws-rpc only because the test's WebSocket is not on the RPC's port + 1).
  const args = parseClientArgs([
    "train",
    "--run-id",
    "meet-rpc",
    "--rpc",
    run.net.url,
    "--ws-rpc",
    run.net.wsUrl,
    "--wallet-private-key-path",
    walletPath,
    "--coordinator",
    run.coordinator,
    "--program-id",
    run.net.ledger.programId,
  ]);
  assert.ok(args.command === "train" && args.solana !== undefined);
  assert.deepEqual([args.relays, args.bootstrapPeers], [[], []]);
  const met: MeetingPlaces[] = [];
  const backend = await connectSolana(args.solana, {
    runId: args.runId,
    wallet,
    p2pIdentity: generateIdentity().publicKey,
    logger: { log: () => {} },
    meet: (at) => met.push(at),
  });
  try {
    // The first read of the account names them, before connect returns.
    assert.deepEqual(met, [{ relays: [RELAY], bootstrapPeers: [BOOTSTRAP] }]);
    // The operator moves the run's relay: the account notification brings the new one.
    const moved = RELAY.replace("203.0.113.7", "198.51.100.9");
    await run.operator.update(run.coordinator, {
      meetingAddresses: [{ kind: "Relay", address: moved }],
    });
    const deadline = Date.now() + 10_000;
    while (met.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(met[1], { relays: [moved], bootstrapPeers: [] });
    // Other updates leave the meeting places alone.
    await run.operator.update(run.coordinator, {
      metadata: { name: "n", description: "", numParameters: 1, vocabSize: 1 },
    });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(met.length, 2, JSON.stringify(met));
  } finally {
    await backend.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a run with a join deposit: the backend pays it from the wallet's token account, or is refused by name", async () => {
  await using run = await startTestRun({
    runId: "deposit",
    config: testConfig(),
    model: testModel(),
  });
  const mint = (await generateKeyPairSigner()).address;
  writeToken(run.net.ledger.svm, mint, null);
  const vault = await run.operator.setJoinDeposit(run.coordinator, mint, 500n);
  const balance = (at: Address) => {
    const acc = run.net.ledger.svm.getAccount(at);
    return acc.exists
      ? new DataView(acc.data.buffer, acc.data.byteOffset).getBigUint64(64, true)
      : -1n;
  };
  const walletOf = (b: SolanaBackend) => getAddressDecoder().decode(b.identity.signer);
  const rich = await connect(run, "deposit");
  const poor = await connect(run, "deposit");
  try {
    const richAccount = await associatedTokenAddress(walletOf(rich), mint);
    writeToken(run.net.ledger.svm, richAccount, { mint, owner: walletOf(rich), amount: 800n });
    await rich.join();
    assert.equal(balance(richAccount), 300n);
    assert.equal(balance(vault), 500n);
    assert.equal(run.pending().length, 1);
    // A wallet whose token account holds too little: refused for good, naming what is needed.
    const poorAccount = await associatedTokenAddress(walletOf(poor), mint);
    writeToken(run.net.ledger.svm, poorAccount, { mint, owner: walletOf(poor), amount: 100n });
    await assert.rejects(
      poor.join(),
      (e) =>
        e instanceof BackendError && e.kind === "Refused" &&
        /requires a join deposit of 500 of mint/.test(e.message) &&
        /InsufficientDeposit/.test(e.message),
    );
    await assert.rejects(poor.join(), (e) => e instanceof BackendError && e.kind === "Refused");
    assert.equal(balance(poorAccount), 100n);
    assert.equal(run.pending().length, 1);
  } finally {
    await rich.close();
    await poor.close();
  }
});
