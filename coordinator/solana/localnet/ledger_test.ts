import assert from "node:assert/strict";
import { generateKeyPairSigner } from "@solana/kit";
import { Ledger, loadProgramBytes, SLOT_MS } from "./ledger.ts";

Deno.test("a missing program file is built and written first", async () => {
  const dir = await Deno.makeTempDir({ prefix: "localnet-" });
  try {
    const path = `${dir}/build/program.so`;
    const bytes = await loadProgramBytes(path);
    assert.deepEqual(await Deno.readFile(path), bytes);
    assert.deepEqual([...bytes.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46], "an ELF file");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the ledger deploys the program; time moves slots and the clock, never back", async () => {
  let now = 1_000_000;
  const ledger = await Ledger.create({ programBytes: await loadProgramBytes(), now: () => now });
  const program = ledger.account(ledger.programId);
  assert.ok(program?.executable, "the program account is executable");
  const start = ledger.slot();
  now += 10 * SLOT_MS;
  assert.equal(ledger.slot(), start + 10n);
  assert.equal(ledger.svm.getClock().unixTimestamp, 1_004n);
  now -= 5 * SLOT_MS; // a clock step backwards does not undo slots
  assert.equal(ledger.slot(), start + 10n);
  const { blockhash } = ledger.latestBlockhash();
  assert.ok(ledger.isBlockhashValid(blockhash));
  assert.equal(ledger.isBlockhashValid("11111111111111111111111111111111"), false);
  const who = (await generateKeyPairSigner()).address;
  const first = ledger.airdrop(who, 1_000_000_000n);
  const second = ledger.airdrop(who, 1_000_000_000n);
  assert.notEqual(first.signature, second.signature, "equal airdrops are two transactions");
  assert.equal(ledger.account(who)?.lamports, 2_000_000_000n);
  assert.deepEqual(ledger.status(first.signature)?.err, null);
  assert.equal(ledger.status("unknown"), null);
});
