/**
 * The Solana backend's claims (`--claim`): on the localnet with the treasurer deployed, the
 * backend claims the points its wallet was paid from the run's treasury as soon as the account
 * shows them, only the new ones each time; without a treasury it claims nothing and asks again a
 * minute later; a claim the vault cannot cover is reported by the treasurer's error name. The
 * points are written into the wallet's registration (epochs are trained in treasurer_test.ts),
 * then a real transaction (set_future_epoch_rates) makes the account change.
 */
import assert from "node:assert/strict";
import { type Address, getAddressEncoder } from "@solana/kit";
import { testConfig, testModel } from "../../tests/support/coordinator_fixtures.ts";
import { startTestRun } from "../../coordinator/solana/testing/localnet_run.ts";
import { CLAIM_RETRY_MS, claimDue, SolanaBackend, type SolanaBackendEvent } from "./solana.ts";
import { TransactionSender } from "../../coordinator/solana/rpc/mod.ts";
import { LOCALNET_TREASURER_PROGRAM_ID } from "../../coordinator/solana/localnet/mod.ts";
import { buildTreasurerOnce } from "../../coordinator/solana/toolchain/mod.ts";
import {
  tokenTransferInstruction,
  treasuryCreateInstruction,
} from "../../coordinator/solana/treasurer/mod.ts";
import { decodeCoordinatorAccount, OFFSETS } from "../../coordinator/solana/abi/mod.ts";
import { generateIdentity } from "../../net/mod.ts";
import {
  newTokenAccount,
  tokenBalance,
} from "../../coordinator/solana/testing/litesvm_accounts.ts";

Deno.test("claimDue: new points at once, a failed try again after a minute, paid ones never", () => {
  assert.equal(claimDue(0n, null, 0), false, "no points");
  assert.equal(claimDue(5n, null, 0), true, "the first points");
  const paid = { earned: 5n, at: 1000, paid: true };
  assert.equal(claimDue(5n, paid, 1000 + 10 * CLAIM_RETRY_MS), false, "paid for");
  assert.equal(claimDue(6n, paid, 1001), true, "one more point");
  const failed = { earned: 5n, at: 1000, paid: false };
  assert.equal(claimDue(5n, failed, 1000 + CLAIM_RETRY_MS - 1), false, "not yet again");
  assert.equal(claimDue(5n, failed, 1000 + CLAIM_RETRY_MS), true, "a minute later");
  assert.equal(claimDue(7n, failed, 1001), true, "the points grew");
});

Deno.test("--claim: the backend claims each epoch's new points from the run's treasury", async () => {
  await using run = await startTestRun({
    runId: "claims",
    config: testConfig({ initMinClients: 2, minClients: 2 }),
    model: testModel(),
    treasurerProgramBytes: (await buildTreasurerOnce()).bytes,
  });
  const svm = run.net.ledger.svm;
  const mint = await newTokenAccount(svm, null);
  const tokenAccount = (owner: Address, amount: bigint) =>
    newTokenAccount(svm, { mint, owner, amount });
  const balance = (at: Address) => tokenBalance(svm, at);

  const wallet = await run.newWallet();
  const destination = await tokenAccount(wallet.signer.address, 0n);
  const events: SolanaBackendEvent[] = [];
  let nowMs = Date.now();
  const backend = await SolanaBackend.connect({
    rpcs: [run.rpc],
    wallet: wallet.signer,
    p2pIdentity: generateIdentity().publicKey,
    programId: run.net.ledger.programId,
    coordinator: run.coordinator,
    runId: "claims",
    tickIntervalMs: 60_000, // no ticks of its own
    now: () => nowMs,
    claim: { treasurerProgramId: LOCALNET_TREASURER_PROGRAM_ID, destination },
    onEvent: (e) => events.push(e),
  });
  /** Sets the wallet's earned points, then a transaction shows the account to the backend. */
  const pay = async (points: bigint) => {
    const acc = svm.getAccount(run.coordinator);
    assert.ok(acc.exists);
    const data = Uint8Array.from(acc.data);
    const me = getAddressEncoder().encode(wallet.signer.address);
    const slot = decodeCoordinatorAccount(data).registry.findIndex((r) =>
      r.signer.every((b, i) => b === me[i])
    );
    assert.ok(slot >= 0, "the wallet is registered");
    new DataView(data.buffer).setBigUint64(OFFSETS.earned + 8 * slot, points, true);
    svm.setAccount({ ...acc, data });
    await run.operator.setFutureEpochRates(run.coordinator, { earningRateTotalShared: points });
  };
  const claims = () => events.flatMap((e) => e.kind === "Claimed" ? [[e.points, e.total]] : []);
  const waitFor = async (what: string, done: () => boolean) => {
    for (let i = 0; i < 100 && !done(); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(
      done(),
      `${what}: ${JSON.stringify(events, (_, v) => typeof v === "bigint" ? `${v}` : v)}`,
    );
  };
  try {
    await backend.join();
    // Points, but the run has no treasury yet: nothing is claimed, nothing fails.
    await pay(42n);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(claims(), []);
    assert.ok(!events.some((e) => e.kind === "SendFailed"), "no treasury is not an error");

    const sender = new TransactionSender({ rpcs: [run.rpc], payer: run.authority.signer });
    const created = await treasuryCreateInstruction({
      programId: LOCALNET_TREASURER_PROGRAM_ID,
      authority: run.authority.signer,
      coordinatorProgram: run.net.ledger.programId,
      coordinator: run.coordinator,
      mint,
    });
    await sender.send([created.instruction]);
    const funds = await tokenAccount(run.authority.signer.address, 1000n);
    await sender.send([
      tokenTransferInstruction({
        source: funds,
        destination: created.vault,
        owner: run.authority.signer,
        amount: 100n,
      }),
    ]);
    // A minute after the last try, the next account change claims them.
    nowMs += 61_000;
    await pay(42n);
    await waitFor("the first claim", () => claims().length === 1);
    assert.deepEqual(claims(), [[42n, 42n]]);
    assert.equal(balance(destination), 42n);
    // The next epoch paid 8 more: only those.
    await pay(50n);
    await waitFor("the second claim", () => claims().length === 2);
    assert.deepEqual(claims()[1], [8n, 50n]);
    assert.equal(balance(destination), 50n);
    // More than the vault holds (50 left): refused by name, nothing paid.
    await pay(500n);
    await waitFor(
      "the refused claim",
      () => events.some((e) => e.kind === "SendFailed" && e.what === "participant_claim"),
    );
    const failed = events.find((e) => e.kind === "SendFailed")!;
    assert.ok(failed.kind === "SendFailed" && /InsufficientFunds \(7117\)/.test(failed.error));
    assert.equal(balance(destination), 50n);
    assert.equal(claims().length, 2);
  } finally {
    await backend.close();
  }
});
