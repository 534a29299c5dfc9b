/**
 * The program's C compiled for the host with AddressSanitizer and
 * UndefinedBehaviorSanitizer replays transactions recorded from litesvm (random
 * differential sequences) and must return the same result codes and reach
 * byte-identical accounts (testing/native_replay.c). This checks the C for memory errors and
 * undefined behaviour the SVM cannot see (the account is one writable region to it), and
 * that nothing depends on the eBPF target.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { Address } from "@solana/kit";
import { differential } from "../testing/random_sequences.ts";
import { addressBytes, CoordinatorSvm } from "../testing/svm.ts";
import { ACCOUNT_SIZE, encodeCoordinatorInstruction } from "../abi/mod.ts";
import { PROGRAM_SOURCE } from "../toolchain/mod.ts";
import { concatBytes } from "../../../common/mod.ts";

const REPLAY_SOURCE = new URL("../testing/native_replay.c", import.meta.url).pathname;

/** Records every coordinator transaction `svm` sends to the first run it touches. */
function record(svm: CoordinatorSvm): () => Uint8Array {
  const chunks: Uint8Array[] = [];
  const u64 = (x: bigint) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, x), true);
    chunks.push(b);
  };
  let target: Address | null = null;
  let clock = { ts: 0, slot: 0n };
  const setClock = svm.setClock.bind(svm);
  svm.setClock = (ts, slot) => {
    clock = { ts, slot: slot ?? clock.slot };
    setClock(ts, slot);
  };
  const send = svm.send.bind(svm);
  svm.send = async (coordinator, ix, opts = {}) => {
    const before = svm.accountBytes(coordinator);
    const result = await send(coordinator, ix, opts);
    if (target === null && before !== null) {
      target = coordinator;
      chunks.push(addressBytes(svm.programId), addressBytes(coordinator), before);
    }
    if (coordinator === target) {
      const data = encodeCoordinatorInstruction(ix);
      u64(BigInt(clock.ts));
      u64(clock.slot);
      chunks.push(Uint8Array.of(opts.signer ? 1 : 0));
      chunks.push(opts.signer ? addressBytes(opts.signer.address) : new Uint8Array(32));
      u64(BigInt(data.length));
      chunks.push(data);
      u64(BigInt(result.ok ? 0 : result.code ?? 0xffff_ffff));
      chunks.push(createHash("sha256").update(svm.accountBytes(coordinator)!).digest());
    }
    return result;
  };
  return () => concatBytes(chunks);
}

Deno.test("native replay: sanitized host build of the C matches the SVM step for step", async () => {
  const dir = await Deno.makeTempDir({ prefix: "psyche-native-" });
  try {
    const compile = new Deno.Command("clang-19", {
      args: [
        "-std=c11",
        "-O1",
        "-g",
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all",
        "-Wall",
        "-Werror",
        `-DACCOUNT_SIZE=${ACCOUNT_SIZE}`,
        PROGRAM_SOURCE,
        REPLAY_SOURCE,
        "-o",
        `${dir}/replay`,
      ],
    }).output();
    const traces: string[] = [];
    for (const seed of [3, 4]) {
      const svm = await CoordinatorSvm.create();
      const trace = record(svm);
      await differential(svm, seed, 200);
      await Deno.writeFile(`${dir}/trace-${seed}.bin`, trace());
      traces.push(`${dir}/trace-${seed}.bin`);
    }
    const built = await compile;
    assert.ok(built.success, new TextDecoder().decode(built.stderr));
    for (const trace of traces) {
      const run = await new Deno.Command(`${dir}/replay`, {
        args: [trace],
        env: { ASAN_OPTIONS: "detect_leaks=0" },
      }).output();
      const stdout = new TextDecoder().decode(run.stdout);
      assert.ok(run.success, `${stdout}\n${new TextDecoder().decode(run.stderr)}`);
      const steps = Number(/replayed (\d+) steps, 0 mismatches/.exec(stdout)?.[1]);
      assert.ok(steps > 100, stdout);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
