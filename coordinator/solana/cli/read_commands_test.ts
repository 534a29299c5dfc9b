/**
 * The read commands against the localnet (litesvm with the real coordinator program and SPL
 * Token): list-runs, show-run, show-user / json-dump-user and can-join, as text and as JSON; and
 * can-join's verdict against the program's own answer: every case here asks can-join, then
 * sends the join, and the join succeeds exactly when can-join said yes (NotAuthorizedToJoin,
 * authorized, InsufficientDeposit, enough deposit, MoreClientsThanBatches, ClientsFull, a stale
 * registration reused). Token accounts, a treasury, a smaller batch, a full registry and later
 * epochs are written into the ledger directly.
 */
import assert from "node:assert/strict";
import {
  type Address,
  generateKeyPairSigner,
  getAddressEncoder,
  type KeyPairSigner,
  lamports,
} from "@solana/kit";
import { solana } from "./testing/solana_cli.ts";
import { loadProgramBytes, startLocalnet } from "../localnet/mod.ts";
import { decodeAccountData, loadWallet, SolanaRpcClient, TransactionSender } from "../rpc/mod.ts";
import {
  ACCOUNT_MAX_CLIENTS,
  ACCOUNT_SIZE,
  type AccountSlice,
  associatedTokenAddress,
  coordinatorInstruction,
  decodeCoordinatorAccount,
  joinDepositAccounts,
  OFFSETS,
  RUN_LISTING_SLICES,
  structLayout,
} from "../abi/mod.ts";
import {
  TREASURY_BYTES,
  TREASURY_MAGIC_TEXT,
  TREASURY_OFFSETS,
  treasuryAddress,
} from "../treasurer/mod.ts";
import { DEFAULT_TREASURER_PROGRAM_ID } from "../rpc/mod.ts";
import { EXIT_CANNOT_JOIN, listRuns } from "./read_commands.ts";
import { type RunSummary, runSummary } from "./reads.ts";
import { writeTokenAt as writeToken } from "../testing/litesvm_accounts.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const STATE = `${ROOT}config/llama-tiny/state.toml`;
const RUN = ["--run-id", "llama-tiny-brown"];

/** The length of every account's data in an RPC answer (its [base64, "base64"] pairs). */
function dataLengths(x: unknown): number[] {
  if (Array.isArray(x) && x.length === 2 && x[1] === "base64" && typeof x[0] === "string") {
    return [decodeAccountData(x as [string, string]).length];
  }
  return typeof x === "object" && x !== null ? Object.values(x).flatMap(dataLengths) : [];
}

Deno.test("reads: list-runs, show-run, show-user and can-join agree with the program", async () => {
  await using net = await startLocalnet({
    port: 0,
    wsPort: 0,
    programBytes: await loadProgramBytes(),
  });
  const svm = net.ledger.svm;
  const dir = await Deno.makeTempDir({ prefix: "solana-reads-" });
  try {
    const rpc = ["--rpc", net.url];
    const key = (name: string) => ["--wallet-private-key-path", `${dir}/${name}.json`];
    const wallets: Record<string, KeyPairSigner> = {};
    for (const name of ["alice", "bob", "friend", "stranger"]) {
      assert.equal((await solana(["keygen", "--out", `${dir}/${name}.json`])).code, 0);
      const a = await solana(["airdrop", "--lamports", "5000000000", ...rpc, ...key(name)]);
      assert.equal(a.code, 0, a.err);
      wallets[name] = (await loadWallet(`${dir}/${name}.json`)).signer;
    }
    assert.equal((await solana(["list-runs", ...rpc])).out, "no runs");

    // Alice's run is permissioned; Bob's is open and takes a join deposit.
    const created: Record<string, Address> = {};
    for (const [who, open] of [["alice", false], ["bob", true]] as const) {
      const c = await solana([
        "create-run",
        ...RUN,
        ...(open ? ["--permissionless"] : []),
        ...rpc,
        ...key(who),
      ]);
      assert.equal(c.code, 0, c.err);
      created[who] = c.out.match(/ at (\w+)/)![1] as Address;
      const u = await solana([
        "update-config",
        ...RUN,
        "--config-path",
        STATE,
        ...rpc,
        ...key(who),
      ]);
      assert.equal(u.code, 0, u.err);
    }
    const mint = (await generateKeyPairSigner()).address;
    writeToken(svm, mint, null);
    const set = await solana([
      "set-join-deposit",
      ...RUN,
      "--mint",
      mint,
      "--amount",
      "400",
      ...rpc,
      ...key("bob"),
    ]);
    assert.equal(set.code, 0, set.err);
    const vault = set.out.match(/into vault (\w+)/)![1] as Address;

    const listed = await solana(["list-runs", "--json", ...rpc]);
    assert.equal(listed.code, 0, listed.err);
    const runs = JSON.parse(listed.out) as Record<string, unknown>[];
    assert.deepEqual(
      runs.map((r) => [r.address, r.mainAuthority, r.state, r.joinDeposit]).sort(),
      [
        [created.alice, wallets.alice.address, "Uninitialized", null],
        [created.bob, wallets.bob.address, "Uninitialized", { amount: "400", mint }],
      ].sort(),
    );
    const table = (await solana(["list-runs", ...rpc])).out.split("\n");
    assert.equal(table.length, 3);
    assert.match(table[0], /^RUN +STATE +EPOCH +STEP +CLIENTS +PENDING +EARNING +JOIN DEPOSIT/);
    assert.ok(table.some((l) => l.includes(`400 of ${mint}`) && l.endsWith(created.bob)));

    /** list-runs' reads over RPC: what it lists, and the data bytes of each method's answers. */
    const counted = async (before?: (method: string, params: unknown[]) => void) => {
      const client = new SolanaRpcClient({ url: net.url });
      const bytes: Record<string, number[]> = {};
      const runs = await listRuns({
        async call<T>(method: string, params: unknown[] = []): Promise<T> {
          before?.(method, params);
          const answer = await client.call<T>(method, params);
          (bytes[method] ??= []).push(...dataLengths(answer));
          return answer;
        },
      }, net.ledger.programId);
      return { runs, bytes };
    };
    /** The runs as list-runs showed them when it read whole accounts. */
    const readWhole = (): RunSummary[] =>
      [created.alice, created.bob].sort().map((at) => {
        const acc = svm.getAccount(at);
        assert.ok(acc.exists);
        return runSummary(at, decodeCoordinatorAccount(Uint8Array.from(acc.data)));
      });

    // list-runs reads slices of each run (abi/run_listing.ts), not its 227,888 bytes: the
    // heads, the earning rate, the deposit and the nonce (no registrations yet).
    const { head, rates, deposit, nonce } = RUN_LISTING_SLICES;
    const sliced = await counted();
    assert.deepEqual(sliced.runs, readWhole());
    assert.deepEqual(sliced.runs, JSON.parse(listed.out));
    assert.deepEqual(sliced.bytes, {
      getProgramAccounts: [head.length, head.length],
      getMultipleAccounts: [rates, rates, deposit, deposit, nonce, nonce].map((x) => x.length),
    });
    assert.equal(head.length + rates.length + deposit.length + nonce.length, 1274);
    assert.ok(1274 * 100 < ACCOUNT_SIZE);

    /** Asks can-join, then joins: returns can-join's exit code, its text and the join's error. */
    const attempt = async (who: string, coordinator: Address, deposit: Address | null) => {
      const asked = await solana([
        "can-join",
        "--coordinator",
        coordinator,
        ...RUN,
        "--wallet",
        wallets[who].address,
        ...rpc,
      ]);
      const json = await solana([
        "can-join",
        "--coordinator",
        coordinator,
        ...RUN,
        "--json",
        ...rpc,
        ...key(who),
      ]);
      assert.equal(json.code, asked.code, json.err);
      const verdict = JSON.parse(json.out) as { canJoin: boolean; reasons: { error: string }[] };
      assert.equal(verdict.canJoin, asked.code === 0);
      const sender = new TransactionSender({
        rpcs: [new SolanaRpcClient({ url: net.url })],
        payer: wallets[who],
      });
      let refused: string | null = null;
      try {
        await sender.send([
          coordinatorInstruction({
            programId: net.ledger.programId,
            coordinator,
            signer: wallets[who],
            ix: { kind: "JoinRun", p2pIdentity: new Uint8Array(32).fill(5) },
            extraAccounts: deposit === null
              ? undefined
              : joinDepositAccounts({ tokenAccount: deposit, vault }),
          }),
        ]);
      } catch (e) {
        refused = (e as Error).message;
      }
      // The program agrees: the join succeeds exactly when can-join said yes.
      assert.equal(refused === null, verdict.canJoin, `${asked.out}\njoin: ${refused}`);
      if (refused !== null) {
        assert.match(refused, new RegExp(verdict.reasons[0].error));
      }
      return { code: asked.code, out: asked.out, errors: verdict.reasons.map((r) => r.error) };
    };

    // A stranger may not join Alice's run; once she grants it, the friend may.
    const stranger = await attempt("stranger", created.alice, null);
    assert.equal(stranger.code, EXIT_CANNOT_JOIN);
    assert.deepEqual(stranger.errors, ["NotAuthorizedToJoin"]);
    assert.match(stranger.out, /cannot join run "llama-tiny-brown":\n {2}NotAuthorizedToJoin: /);
    const granted = await solana([
      "join-authorization",
      "create",
      ...RUN,
      "--authorizer",
      wallets.friend.address,
      ...rpc,
      ...key("alice"),
    ]);
    assert.equal(granted.code, 0, granted.err);
    const friend = await attempt("friend", created.alice, null);
    assert.equal(friend.code, 0);
    assert.equal(friend.out, `${wallets.friend.address} can join run "llama-tiny-brown"`);

    // Bob's run: the deposit's token account holds too little, then enough.
    const ata = await associatedTokenAddress(wallets.friend.address, mint);
    writeToken(svm, ata, { mint, owner: wallets.friend.address, amount: 300n });
    const short = await attempt("friend", created.bob, ata);
    assert.deepEqual(short.errors, ["InsufficientDeposit"]);
    assert.match(short.out, /holds only 300/);
    writeToken(svm, ata, { mint, owner: wallets.friend.address, amount: 1_000n });
    assert.deepEqual((await attempt("friend", created.bob, ata)).errors, []);

    // A batch of one sequence (written into the account) has room for the friend only.
    const acc = svm.getAccount(created.bob);
    assert.ok(acc.exists);
    const data = Uint8Array.from(acc.data);
    const config = structLayout("config_t").offsets;
    const v = new DataView(data.buffer);
    v.setUint16(OFFSETS.config + config.globalBatchSizeStart, 1, true);
    v.setUint16(OFFSETS.config + config.globalBatchSizeEnd, 1, true);
    svm.setAccount({ ...acc, data });
    const theirs = await associatedTokenAddress(wallets.stranger.address, mint);
    writeToken(svm, theirs, { mint, owner: wallets.stranger.address, amount: 1_000n });
    const full = await attempt("stranger", created.bob, theirs);
    assert.deepEqual(full.errors, ["MoreClientsThanBatches"]);
    assert.match(full.out, /1 client\(s\) are pending for the next epoch and its batch has 1/);

    // show-run: text, and --json is json-dump-run's JSON.
    const where = ["--main-authority", wallets.bob.address, ...rpc];
    const shown = await solana(["show-run", ...RUN, ...where]);
    assert.equal(shown.code, 0, shown.err);
    assert.match(shown.out, new RegExp(`run "llama-tiny-brown" at ${created.bob}`));
    assert.match(shown.out, /join deposit 400 of \w+: held 400, forfeited 0/);
    assert.match(shown.out, /slashed points per client dropped or ejected/);
    assert.match(shown.out, new RegExp(`0 +${wallets.friend.address} +pending +0 +0 +400`));
    const asJson = await solana(["show-run", ...RUN, "--json", ...where]);
    assert.equal(asJson.out, (await solana(["json-dump-run", ...RUN, ...where])).out);
    assert.equal(JSON.parse(asJson.out).registry[0].deposit, "400");
    assert.equal(JSON.parse(asJson.out).registry[0].slashed, "0");

    // The friend's view: a locked deposit, no treasury; then a treasury written into the ledger.
    const user = ["--wallet", wallets.friend.address, ...where];
    const before = JSON.parse((await solana(["json-dump-user", ...RUN, ...user])).out);
    assert.equal(before.registration.status, "pending");
    assert.equal(before.registration.p2pIdentity, "05".repeat(32));
    assert.equal(before.registration.depositLocked, true);
    assert.equal(before.treasury, null);
    const treasury = await treasuryAddress(DEFAULT_TREASURER_PROGRAM_ID, created.bob);
    const tVault = (await generateKeyPairSigner()).address;
    writeToken(svm, tVault, { mint, owner: treasury, amount: 5_000n });
    const t = new Uint8Array(TREASURY_BYTES);
    t.set(new TextEncoder().encode(TREASURY_MAGIC_TEXT), 0);
    t[TREASURY_OFFSETS.version] = 1;
    const enc = getAddressEncoder();
    t.set(enc.encode(net.ledger.programId), TREASURY_OFFSETS.coordinatorProgram);
    t.set(enc.encode(created.bob), TREASURY_OFFSETS.coordinator);
    t.set(enc.encode(mint), TREASURY_OFFSETS.mint);
    t.set(enc.encode(tVault), TREASURY_OFFSETS.vault);
    t.set(enc.encode(wallets.bob.address), TREASURY_OFFSETS.authority);
    new DataView(t.buffer).setBigUint64(TREASURY_OFFSETS.totalClaimed, 120n, true);
    svm.setAccount({
      address: treasury,
      data: t,
      executable: false,
      lamports: lamports(svm.minimumBalanceForRentExemption(BigInt(t.length))),
      programAddress: DEFAULT_TREASURER_PROGRAM_ID,
      space: BigInt(t.length),
    });
    const after = JSON.parse((await solana(["show-user", ...RUN, "--json", ...user])).out);
    assert.deepEqual(after.treasury, {
      ...after.treasury,
      address: treasury,
      vault: tVault,
      vaultAmount: "5000",
      totalClaimed: "120",
      participantCreated: false,
      claimed: "0",
      claimableNow: "0",
    });
    const text = await solana(["show-user", ...RUN, ...user]);
    assert.equal(text.code, 0, text.err);
    assert.match(text.out, /join deposit 400 held, locked/);
    assert.match(text.out, /vault holds 5000, 120 claimed in all; this wallet claimed 0/);
    assert.match(text.out, /pools: not linked to runs/);

    // A full registry (written into the account: the rest of the slots, empty, joined epoch 0):
    // none is stale while epoch 0 is the running one; two epochs later every empty one is, and
    // the stranger takes the first (the friend's holds a deposit).
    const edit = (change: (v: DataView) => void) => {
      const acc = svm.getAccount(created.bob);
      assert.ok(acc.exists);
      const data = Uint8Array.from(acc.data);
      change(new DataView(data.buffer));
      svm.setAccount({ ...acc, data });
    };
    edit((v) => {
      v.setUint16(OFFSETS.registryLen, ACCOUNT_MAX_CLIENTS, true);
      v.setBigUint64(OFFSETS.nextActive, 1n, true);
    });
    const crowded = await attempt("stranger", created.bob, theirs);
    assert.deepEqual(crowded.errors, ["ClientsFull", "MoreClientsThanBatches"]);
    edit((v) => v.setBigUint64(OFFSETS.nextActive, 3n, true));
    assert.deepEqual((await attempt("stranger", created.bob, theirs)).errors, []);
    const reused = await solana([
      "json-dump-user",
      ...RUN,
      "--wallet",
      wallets.stranger.address,
      ...where,
    ]);
    assert.equal(JSON.parse(reused.out).registration.slot, 1);

    // With registrations, list-runs reads the registries too (72 bytes a registration): Bob's
    // 256 and Alice's one, each in a read of its own length.
    const crowdedList = await counted();
    assert.deepEqual(crowdedList.runs, readWhole());
    const bobs = crowdedList.runs.find((r) => r.address === created.bob)!;
    assert.deepEqual([bobs.registered, bobs.pending], [ACCOUNT_MAX_CLIENTS, 1]);
    const alices = crowdedList.runs.find((r) => r.address === created.alice)!;
    assert.equal(alices.registered, 1);
    assert.deepEqual(
      crowdedList.bytes.getMultipleAccounts.sort((a, b) => a - b),
      [8, 8, 8, 8, 56, 56, 72, ACCOUNT_MAX_CLIENTS * 72],
    );

    // A run that changes between list-runs' reads (its nonce moved) is read again whole.
    let changed = false;
    const raced = await counted((_method, params) => {
      const slice = (params[1] as { dataSlice?: AccountSlice } | undefined)?.dataSlice;
      if (changed || slice?.offset !== nonce.offset) return;
      changed = true;
      edit((v) => {
        v.setBigUint64(OFFSETS.nonce, v.getBigUint64(OFFSETS.nonce, true) + 1n, true);
        v.setBigUint64(OFFSETS.currentEpochRates, 777n, true);
      });
    });
    assert.equal(raced.runs.find((r) => r.address === created.bob)!.earningRate, "777");
    assert.deepEqual(raced.runs, readWhole());
    assert.deepEqual(raced.bytes.getAccountInfo, [ACCOUNT_SIZE]);

    // Usage errors name what is missing; a missing run exits 1.
    const nobody = await solana(["show-user", ...RUN, ...where]);
    assert.equal(nobody.code, 2);
    assert.match(nobody.err, /show-user needs --wallet PUBKEY or --wallet-private-key-path FILE/);
    const missing = await solana(["show-run", "--run-id", "nope", ...where]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /solana show-run: no account at \w+/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
