import assert from "node:assert/strict";
import { getAddressDecoder } from "@solana/kit";
import { ACCOUNT_MAX_CLIENTS, type CoordinatorAccount, type Registration } from "../abi/mod.ts";
import {
  canJoin,
  type DepositSource,
  formatRun,
  formatRuns,
  formatUser,
  formatVerdict,
  isReusable,
  registrationSlot,
  runSummary,
  tokenAccountOf,
  userJson,
} from "./reads.ts";
import { SPL_TOKEN_PROGRAM_ADDRESS } from "../abi/mod.ts";

const key = (n: number) => new Uint8Array(32).fill(n);
const addr = (n: number) => getAddressDecoder().decode(key(n));
const MINT = key(200);
const RUN = addr(100);

/** Keys 0..65535 that never equal key(n) (a full registry has more than 256 wallets). */
const wide = (i: number) => Uint8Array.of(i & 0xff, i >> 8, ...new Uint8Array(29), 0xee);

function registration(signer: number, active: bigint, extra: Partial<Registration> = {}) {
  return {
    signer: signer >= 1000 ? wide(signer) : key(signer),
    p2pIdentity: key(signer + 1),
    active,
    earned: 0n,
    deposit: 0n,
    slashed: 0n,
    ...extra,
  };
}

/** A run with the fields the reads look at (the rest of the state is not theirs). */
function run(edit: Partial<CoordinatorAccount> = {}, state: Record<string, unknown> = {}) {
  const rates = { earningRateTotalShared: 100n, slashingRatePerClient: 5n };
  return {
    version: 1,
    permissionless: true,
    nonce: 1n,
    mainAuthority: key(1),
    joinAuthority: key(1),
    authorizer: null,
    delegates: [],
    metadata: {},
    meetingAddresses: [],
    nextActive: 2n,
    registry: [],
    currentEpochRates: rates,
    futureEpochRates: { ...rates, earningRateTotalShared: 200n },
    joinDeposit: {
      amount: 0n,
      held: 0n,
      forfeited: 0n,
      mint: null,
      vault: null,
      vaultAuthorityBump: 0,
    },
    ...edit,
    state: {
      runId: "tiny",
      runState: "WaitingForMembers",
      config: { globalBatchSizeEnd: 4 },
      progress: { epoch: 1, step: 3, epochStartDataIndex: 0 },
      epochState: { clients: [] },
      ...state,
    },
  } as unknown as CoordinatorAccount;
}

const errors = (a: CoordinatorAccount, wallet = key(9), source: DepositSource | null = null) =>
  canJoin(a, wallet, source).reasons.map((r) => r.error);

Deno.test("can-join: an open run takes a new wallet", () => {
  const v = canJoin(run(), key(9), null);
  assert.deepEqual(v, { canJoin: true, reasons: [] });
  assert.equal(formatVerdict("tiny", addr(9), v), `${addr(9)} can join run "tiny"`);
});

Deno.test("can-join: a Finished run refuses everyone", () => {
  assert.deepEqual(errors(run({}, { runState: "Finished" })), ["RunFinished"]);
});

Deno.test("can-join: a permissioned run takes its authorizer and delegates only", () => {
  const closed = run({ permissionless: false });
  assert.deepEqual(errors(closed), ["NotAuthorizedToJoin"]);
  const granted = run({ permissionless: false, authorizer: key(3), delegates: [key(4)] });
  assert.deepEqual(errors(granted, key(3)), []);
  assert.deepEqual(errors(granted, key(4)), []);
  assert.deepEqual(errors(granted, key(9)), ["NotAuthorizedToJoin"]);
  const v = canJoin(granted, key(9), null);
  assert.match(
    formatVerdict("tiny", addr(9), v),
    /cannot join run "tiny":\n {2}NotAuthorizedToJoin: .*authorizer/,
  );
});

Deno.test("can-join: a full registry takes a new wallet only into a stale registration", () => {
  const full = (r: (i: number) => Registration) =>
    run({ registry: Array.from({ length: ACCOUNT_MAX_CLIENTS }, (_, i) => r(i)) }, {
      config: { globalBatchSizeEnd: 10_000 },
    });
  // Joined the running epoch (active + 1 == nextActive): not stale.
  assert.deepEqual(errors(full((i) => registration(1000 + i, 1n))), ["ClientsFull"]);
  // Joined an older epoch: stale, unless it holds points (earned or slashed) or a deposit.
  const old = full((i) => registration(1000 + i, 0n));
  assert.ok(isReusable(old, 0));
  assert.deepEqual(errors(old), []);
  assert.deepEqual(errors(full((i) => registration(1000 + i, 0n, { earned: 1n }))), [
    "ClientsFull",
  ]);
  assert.deepEqual(errors(full((i) => registration(1000 + i, 0n, { deposit: 1n }))), [
    "ClientsFull",
  ]);
  assert.deepEqual(errors(full((i) => registration(1000 + i, 0n, { slashed: 1n }))), [
    "ClientsFull",
  ]);
  // A wallet already registered keeps its registration.
  assert.deepEqual(errors(full((i) => registration(1000 + i, 1n)), wide(1000)), []);
});

Deno.test("can-join: more pending clients than the batch has sequences", () => {
  const a = run({ registry: [registration(10, 2n), registration(11, 2n)] }, {
    config: { globalBatchSizeEnd: 2 },
  });
  assert.deepEqual(errors(a), ["MoreClientsThanBatches"]);
  // A pending wallet joining again changes nothing: allowed.
  assert.deepEqual(errors(a, key(10)), []);
  assert.equal(registrationSlot(a, key(11)), 1);
});

Deno.test("can-join: a join deposit needs the wallet's token account of the mint, with enough", () => {
  const a = run({
    joinDeposit: {
      amount: 400n,
      held: 0n,
      forfeited: 0n,
      mint: MINT,
      vault: key(201),
      vaultAuthorityBump: 255,
    },
  });
  const from = (account: DepositSource["account"]): DepositSource => ({
    address: addr(50),
    account,
  });
  const enough = { mint: MINT, owner: key(9), amount: 400n };
  assert.deepEqual(errors(a, key(9), from(enough)), []);
  assert.deepEqual(errors(a, key(9), null), ["InsufficientDeposit"]);
  assert.deepEqual(errors(a, key(9), from(null)), ["InsufficientDeposit"]);
  assert.deepEqual(errors(a, key(9), from({ ...enough, amount: 399n })), ["InsufficientDeposit"]);
  assert.deepEqual(errors(a, key(9), from({ ...enough, mint: key(7) })), ["InsufficientDeposit"]);
  assert.deepEqual(errors(a, key(9), from({ ...enough, owner: key(8) })), ["InsufficientDeposit"]);
  assert.match(
    canJoin(a, key(9), from({ ...enough, amount: 1n })).reasons[0].message,
    /holds only 1/,
  );
  // A registration that holds its deposit pays none again.
  const holding = { ...a, registry: [registration(9, 1n, { deposit: 400n })] };
  assert.deepEqual(errors(holding, key(9), null), []);
  // Every reason at once, in the program's order.
  const all = run({ ...a, permissionless: false, registry: [registration(10, 2n)] }, {
    runState: "Finished",
    config: { globalBatchSizeEnd: 1 },
  });
  assert.deepEqual(errors(all, key(9), null), [
    "RunFinished",
    "NotAuthorizedToJoin",
    "MoreClientsThanBatches",
    "InsufficientDeposit",
  ]);
});

Deno.test("tokenAccountOf: an initialized SPL Token account only", () => {
  const data = new Uint8Array(165);
  data.set(MINT, 0);
  data.set(key(9), 32);
  new DataView(data.buffer).setBigUint64(64, 77n, true);
  data[108] = 1;
  assert.deepEqual(tokenAccountOf(SPL_TOKEN_PROGRAM_ADDRESS, data), {
    mint: MINT,
    owner: key(9),
    amount: 77n,
  });
  assert.equal(tokenAccountOf(addr(3), data), null, "not owned by SPL Token");
  assert.equal(tokenAccountOf(SPL_TOKEN_PROGRAM_ADDRESS, null), null);
  const frozen = data.slice();
  frozen[108] = 2;
  assert.equal(tokenAccountOf(SPL_TOKEN_PROGRAM_ADDRESS, frozen), null);
});

Deno.test("list-runs and show-run: a line a run; each client's status, points and deposit", () => {
  const a = run({
    registry: [
      registration(10, 1n, { earned: 50n, slashed: 5n }),
      registration(11, 2n, { deposit: 400n }),
    ],
    joinDeposit: {
      amount: 400n,
      held: 400n,
      forfeited: 0n,
      mint: MINT,
      vault: key(201),
      vaultAuthorityBump: 255,
    },
  }, { runState: "RoundTrain", epochState: { clients: [{}] } });
  const s = runSummary(RUN, a);
  assert.deepEqual(s, {
    address: RUN,
    runId: "tiny",
    mainAuthority: addr(1),
    state: "RoundTrain",
    epoch: 1,
    step: 3,
    clients: 1,
    pending: 1,
    registered: 2,
    earningRate: "100",
    joinDeposit: { amount: "400", mint: getAddressDecoder().decode(MINT) },
  });
  const text = formatRuns([s, runSummary(addr(101), run())]).split("\n");
  assert.match(
    text[0],
    /^RUN +STATE +EPOCH +STEP +CLIENTS +PENDING +EARNING +JOIN DEPOSIT +ACCOUNT$/,
  );
  assert.match(text[1], new RegExp(`^tiny +RoundTrain +1 +3 +1 +1 +100 +400 of \\w+ +${RUN}$`));
  assert.match(text[2], / - +\w+$/);
  assert.equal(formatRuns([]), "no runs");
  const shown = formatRun(RUN, a);
  assert.match(shown, /this epoch shares 100 points; the next 200/);
  assert.match(shown, /slashing rate 5 \(next 5\) slashed points per client dropped or ejected/);
  assert.match(shown, /join deposit 400 of \w+: held 400, forfeited 0/);
  assert.match(shown, /SLOT +WALLET +STATUS +EARNED +SLASHED +DEPOSIT/);
  assert.match(shown, new RegExp(`0 +${addr(10)} +in the running epoch +50 +5 +0`));
  assert.match(shown, new RegExp(`1 +${addr(11)} +pending +0 +0 +400`));
});

Deno.test("json-dump-user: registration, deposit lock and treasury claims", () => {
  const a = run({
    registry: [registration(9, 2n, { earned: 70n, deposit: 400n, slashed: 3n })],
  });
  const treasury = {
    address: addr(60),
    vault: addr(61),
    vaultAmount: 1000n,
    totalClaimed: 30n,
    participant: addr(62),
    participantCreated: true,
    claimed: 30n,
  };
  const j = userJson({ address: RUN, account: a }, addr(9), key(9), treasury);
  assert.deepEqual(j.registration, {
    slot: 0,
    status: "pending",
    pending: true,
    active: "2",
    p2pIdentity: "0a".repeat(32),
    earned: "70",
    slashed: "3",
    deposit: "400",
    depositLocked: true,
    depositWithdrawable: "0",
  });
  assert.deepEqual((j.treasury as Record<string, unknown>).claimableNow, "40");
  const text = formatUser(j);
  assert.match(text, /registration 0: pending/);
  assert.match(text, /earned 70 points, slashed 3 \(informational\)/);
  assert.match(text, /join deposit 400 held, locked/);
  assert.match(
    text,
    /vault holds 1000, 30 claimed in all; this wallet claimed 30, may claim 40 now/,
  );
  assert.match(text, /pools: not linked to runs/);
  // An older registration's deposit may be withdrawn; a stranger has none; no treasury.
  const idle = run({ registry: [registration(9, 0n, { deposit: 400n })] });
  const free = userJson({ address: RUN, account: idle }, addr(9), key(9), null);
  assert.equal((free.registration as Record<string, unknown>).depositWithdrawable, "400");
  assert.equal(free.treasury, null);
  const none = userJson({ address: RUN, account: idle }, addr(8), key(8), null);
  assert.equal(none.registration, null);
  assert.match(formatUser(none), /no registration\n {2}no treasury for this run/);
});
