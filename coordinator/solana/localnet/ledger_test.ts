import assert from "node:assert/strict";
import { generateKeyPairSigner } from "@solana/kit";
import { Ledger, loadProgramBytes, SLOT_MS } from "./ledger.ts";
import { sourcesHash } from "../toolchain/mod.ts";

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

Deno.test("a program file built from other C sources is rebuilt; one built from these is read", async () => {
  const dir = await Deno.makeTempDir({ prefix: "localnet-" });
  try {
    const [path, sources] = [`${dir}/program.so`, `${dir}/program`];
    await Deno.mkdir(sources);
    await Deno.writeTextFile(`${sources}/machine.c`, "/* a source */");
    await Deno.writeTextFile(`${sources}/notes.txt`, "not a source");
    // A file with no stamp (an older build, a copy) is rebuilt from the project's program.
    await Deno.writeFile(path, new Uint8Array([1, 2, 3]));
    const built = await loadProgramBytes(path, sources);
    assert.deepEqual([...built.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46], "rebuilt: an ELF file");
    assert.equal(
      (await Deno.readTextFile(`${path}.sources`)).trim(),
      await sourcesHash(sources),
    );
    // Stamped with these sources: read as it is (here, bytes that are not a program).
    const kept = new Uint8Array([4, 5, 6]);
    await Deno.writeFile(path, kept);
    assert.deepEqual(await loadProgramBytes(path, sources), kept);
    // A file that is not C changes nothing; an edited C file or header does.
    await Deno.writeTextFile(`${sources}/notes.txt`, "edited");
    assert.deepEqual(await loadProgramBytes(path, sources), kept);
    await Deno.writeTextFile(`${sources}/layout.h`, "/* a new header */");
    assert.notDeepEqual(await loadProgramBytes(path, sources), kept);
    await Deno.writeFile(path, kept);
    await Deno.writeTextFile(`${sources}/machine.c`, "/* edited */");
    assert.notDeepEqual(await loadProgramBytes(path, sources), kept);
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
