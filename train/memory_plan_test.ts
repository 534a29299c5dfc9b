import assert from "node:assert/strict";
import { checkTrainingMemory } from "./memory_plan.ts";
import { parseTrainArgs, type TrainOptions } from "./cli.ts";
import { MemoryPlanError } from "../model/mod.ts";

function options(args: string[]): TrainOptions & { sequenceLength: number } {
  const o = parseTrainArgs(["--data-path=unused", "--logs=console", ...args]);
  if (o === "help") throw new Error("unexpected help");
  if (o.sequenceLength === null) throw new Error("the tests give --sequence-length");
  return { ...o, sequenceLength: o.sequenceLength };
}

Deno.test("train prints the memory plan before loading, for the tiny and the 1B model", async () => {
  const lines: string[] = [];
  await checkTrainingMemory(
    options(["--model=config/models/llama-tiny", "--sequence-length=64", "--micro-batch=2"]),
    (l) => lines.push(l),
  );
  assert.match(lines[0], /^memory plan: .* parameters, adamw, f32, micro-batch 2 × 64 tokens$/);
  assert.ok(lines.some((l) => l.includes("of maxBufferSize")));
  // llama-tiny has no weights file: its seeded start is streamed, one chunk on the host.
  assert.ok(lines.some((l) => /host: seeded init, one chunk at a time/.test(l)), lines.join("\n"));
  assert.ok(!lines.some((l) => /f32 weights in host memory/.test(l)), lines.join("\n"));
  // Llama-1B: accepted or refused by this machine's memory (model/memory_plan_test.ts checks
  // both on a fixed machine); either way the plan is printed first, its seeded start streamed.
  const big: string[] = [];
  try {
    await checkTrainingMemory(
      options([
        "--model=config/models/llama-1b",
        "--sequence-length=128",
        "--micro-batch=1",
        "--total-batch=1",
        "--optimizer=distro",
      ]),
      (l) => big.push(l),
    );
  } catch (e) {
    if (!(e instanceof MemoryPlanError)) throw e;
  }
  assert.match(big[0], /^memory plan: 1\.24B parameters, distro/);
  assert.ok(
    big.some((l) => /host: upload staging \(one chunk\)\s+16\.0 MiB/.test(l)),
    big.join("\n"),
  );
});
