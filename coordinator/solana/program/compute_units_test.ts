import assert from "node:assert/strict";
import { measureComputeUnits } from "../testing/compute_units.ts";
import { OFFSETS, structLayout } from "../abi/mod.ts";
import { CLIENT_STATES } from "../../core/mod.ts";
import { CoordinatorSvm, MAX_COMPUTE_UNITS, MAX_TRANSACTION_BYTES } from "../testing/svm.ts";

const svm = await CoordinatorSvm.create();

Deno.test("compute units: every instruction at 256 clients fits Solana's limits", async () => {
  const r = await measureComputeUnits(256, svm, { epochEnd: true });
  for (
    const key of [
      "join",
      "tickStartEpoch",
      "warmupWitness",
      "witnessMax",
      "tickNextRound",
      "healthCheckOne",
      "updateMeetingFull",
      "setFutureEpochRates",
      "tickEndEpoch",
    ] as const
  ) {
    assert.ok(r[key] > 0 && r[key] < MAX_COMPUTE_UNITS, `${key}: ${r[key]} compute units`);
  }
  // The default per-instruction budget (200k) suffices for all of them.
  assert.ok(Math.max(r.join, r.tickStartEpoch, r.witnessMax, r.healthCheckOne) < 200_000);
  // Setting the rates is a few field writes; the epoch's end pays its 255 Healthy finishers
  // (the client dropped by the health check earns nothing and gets the slashing rate, 5) in one
  // pass over the registry.
  assert.ok(r.setFutureEpochRates < 2_000, `set_future_epoch_rates: ${r.setFutureEpochRates}`);
  assert.equal(r.epochFinishers, 255);
  assert.ok(r.tickEndEpoch < 100_000, `epoch-end tick: ${r.tickEndEpoch}`);
  const slashed = svm.coordinatorAccount(r.coordinator).registry.map((x) => x.slashed);
  assert.equal(slashed.filter((x) => x === 5n).length, 1, "the dropped client is slashed");
  assert.equal(slashed.filter((x) => x === 0n).length, 255);
  assert.ok(
    r.witnessTransactionBytes <= MAX_TRANSACTION_BYTES,
    `witness transaction is ${r.witnessTransactionBytes} bytes`,
  );
  // Four meeting addresses of 192 bytes (~15,300 units: each byte is checked) fit one
  // transaction, even with a second signer paying and a compute-budget instruction.
  assert.ok(r.updateMeetingFull < 30_000, `meeting update: ${r.updateMeetingFull}`);
  assert.ok(
    r.meetingTransactionBytes <= MAX_TRANSACTION_BYTES,
    `meeting update transaction is ${r.meetingTransactionBytes} bytes`,
  );
});

Deno.test("compute units: verification at 256 clients, every round sampled", async () => {
  const r = await measureComputeUnits(256, svm, { verification: true });
  const v = r.verification;
  assert.equal(v.stagesClosed, 3, "three contested stages closed in one tick");
  for (const [key, units] of Object.entries({ ...v, tickNextRound: r.tickNextRound })) {
    if (key === "stagesClosed") continue;
    assert.ok(units > 0, `${key} was measured`);
  }
  // Measured (docs/solana-program.md, "Costs"): a report ~7,300, the round tick that samples
  // four results ~56,000, the tick that closes three contested stages ~46,000, the one that
  // ejects 11 idle witnesses ~109,000. Reports and sampling ticks fit the default 200k budget
  // with room; a tick closing many stages at once may not, so the backend and the operator's
  // `tick` ask for the whole transaction budget.
  assert.ok(Math.max(v.report, v.decidePass, v.decideFail) < 20_000, JSON.stringify(v));
  assert.ok(r.tickNextRound < 100_000, `sampling tick: ${r.tickNextRound}`);
  assert.ok(v.tickCloseStages < 150_000, `closing tick: ${v.tickCloseStages}`);
  // 32 witnesses, a quorum of 21: the other 11 are ejected as idle, in one pass of the shuffle.
  assert.equal(v.idleWitnesses, 11);
  assert.ok(v.tickIdleWitnesses < 200_000, `idle witnesses tick: ${v.tickIdleWitnesses}`);
  // The tick measured is the one that ejected them (a tick that did nothing costs ~600 units:
  // the harness measured such a one after a witness quorum began ending RoundTrain).
  assert.ok(v.tickIdleWitnesses > 20_000, `idle witnesses tick: ${v.tickIdleWitnesses}`);
});

Deno.test("compute units: the join deposit at 256 clients", async () => {
  const plain = await measureComputeUnits(256, svm);
  const r = await measureComputeUnits(256, svm, { epochEnd: true, deposit: true });
  const d = r.deposit;
  if (Deno.env.get("S1_DEBUG")) console.log(JSON.stringify({ plain: plain.join, ...d }));
  for (const [key, units] of Object.entries(d)) {
    assert.ok(units > 0 && units < 200_000, `${key}: ${units} compute units`);
  }
  // Paying the deposit adds a token transfer by CPI (and a second parse of the input) to the
  // join; the withdrawal and the sweep are one signed transfer each, and a withdrawal without
  // its registry slot a search too (~16,000 units at 256 registrations: the hint skips it).
  assert.ok(d.join - plain.join < 15_000, `join ${plain.join} -> ${d.join}`);
  assert.ok(Math.max(d.withdraw, d.sweep) < 5_000, JSON.stringify(d));
  assert.ok(d.withdrawSearch - d.withdraw > 10_000, JSON.stringify(d));
  assert.ok(d.withdrawSearch < 25_000, JSON.stringify(d));
  // Finding the vault authority's bump costs a PDA search.
  assert.ok(d.setJoinDeposit < 20_000, `set_join_deposit: ${d.setJoinDeposit}`);
  // The epoch end forfeits the dropped client's deposit on top of paying the 255 finishers.
  assert.equal(r.epochFinishers, 255);
  assert.ok(r.tickEndEpoch < 100_000, `epoch-end tick: ${r.tickEndEpoch}`);
  assert.equal(svm.coordinatorAccount(r.coordinator).joinDeposit.forfeited, 0n, "swept");
});

Deno.test("compute units: 255 clients forfeiting their deposits at once end the epoch in one tick", async () => {
  // Left in RoundTrain with 256 paid-up clients; all but the first are marked Dropped in the
  // account (a state many health checks could reach), then the ticks run the epoch out.
  const r = await measureComputeUnits(256, svm, { deposit: true });
  const client = structLayout("client_t");
  const clients = OFFSETS.epochState + structLayout("epoch_state_t").offsets.clients;
  const account = svm.svm.getAccount(r.coordinator);
  assert.ok(account.exists);
  const data = new Uint8Array(account.data);
  for (let i = 1; i < 256; i++) {
    data[clients + i * client.size + client.offsets.state] = CLIENT_STATES.indexOf("Dropped");
  }
  svm.svm.setAccount({ ...account, data });
  let now = 1_000_000;
  let endTick = 0;
  while (svm.coordinatorAccount(r.coordinator).state.runState !== "WaitingForMembers") {
    svm.setClock(now += 100, BigInt(now));
    const tick = await svm.send(r.coordinator, { kind: "Tick" }, { computeUnitLimit: 1_400_000 });
    assert.ok(tick.ok, tick.error ?? "");
    endTick = tick.computeUnits;
  }
  const d = svm.coordinatorAccount(r.coordinator).joinDeposit;
  assert.equal(d.forfeited, 255n * 1_000_000n);
  assert.equal(d.held, 1_000_000n);
  const slashed = svm.coordinatorAccount(r.coordinator).registry.map((x) => x.slashed);
  assert.deepEqual(slashed, [0n, ...Array(255).fill(5n)], "the 255 dropped are slashed");
  // One pass over the registry, however many forfeit and are slashed (~53,500 units).
  assert.ok(endTick < 100_000, `epoch-end tick with 255 forfeits: ${endTick}`);
});
