import assert from "node:assert/strict";
import { parseCompareArgs } from "./cli.ts";
import { UsageError } from "../../common/mod.ts";

Deno.test("parseCompareArgs: defaults are the tiny model on the bundled corpus, PyTorch on the CPU", () => {
  assert.deepEqual(parseCompareArgs([]), {
    config: "config/models/llama-tiny",
    data: "data/corpus/brown/train",
    batch: 4,
    seqLen: 64,
    warmup: 2,
    steps: 5,
    lr: 1e-3,
    seed: 1,
    device: "cpu",
    python: undefined,
    threads: 0,
    workDir: null,
    json: false,
    recompute: false,
    memoryPlan: false,
    tiling: undefined,
  });
  assert.equal(parseCompareArgs(["--help"]), "help");
});

Deno.test("parseCompareArgs reads every flag", () => {
  const o = parseCompareArgs([
    "--config=config/models/llama-20m",
    "--batch=8",
    "--seq-len=256",
    "--warmup=3",
    "--steps=10",
    "--lr=3e-4",
    "--seed=9",
    "--device=cuda",
    "--python=/opt/py",
    "--threads=2",
    "--work-dir=/tmp/x",
    "--json",
    "--recompute",
    "--memory-plan",
    "--tiling=8,8,16,16,8,vec4",
  ]);
  assert.ok(o !== "help");
  assert.equal(o.config, "config/models/llama-20m");
  assert.deepEqual([o.batch, o.seqLen, o.warmup, o.steps, o.lr, o.seed], [8, 256, 3, 10, 3e-4, 9]);
  assert.deepEqual([o.device, o.python, o.threads, o.workDir, o.json, o.recompute], [
    "cuda",
    "/opt/py",
    2,
    "/tmp/x",
    true,
    true,
  ]);
  assert.equal(o.memoryPlan, true);
  assert.equal(o.tiling, "8,8,16,16,8,vec4");
});

Deno.test("parseCompareArgs names the flag that is wrong", () => {
  const bad: [string[], RegExp][] = [
    [["--batch=0"], /--batch must be an integer in \[1, /],
    [["--seq-len=1"], /--seq-len must be an integer in \[2, /],
    [["--warmup=0"], /--warmup must be an integer in \[1, /],
    [["--steps=2.5"], /--steps must be an integer/],
    [["--lr=-1"], /--lr must be a positive number, found "-1"/],
    [["--lr="], /--lr must be a positive number/],
    [["--device=tpu"], /--device must be cpu or cuda, found "tpu"/],
    [["--tiling=4,4"], /--tiling: tiling "4,4": expected rows,cols,wx,wy,depth/],
    [["--bogus"], /bogus/],
  ];
  for (const [argv, message] of bad) {
    assert.throws(
      () => parseCompareArgs(argv),
      (e) => e instanceof UsageError && message.test(e.message),
    );
  }
});
