import assert from "node:assert/strict";
import {
  findTorchPython,
  pythonCandidates,
  runTorchSteps,
  TorchRunError,
  torchStepArgs,
  type TorchStepOptions,
  TorchUnavailableError,
} from "./torch_runner.ts";

const OPTIONS: TorchStepOptions = {
  modelDir: "/m",
  tokensFile: "/t.u32",
  batch: 2,
  seqLen: 8,
  warmup: 1,
  steps: 3,
  lr: 0.001,
  device: "cpu",
};

Deno.test("pythonCandidates: an explicit --python alone, else $PYTHON, python3, Debian's", () => {
  assert.deepEqual(pythonCandidates("/opt/py", "/env/py"), ["/opt/py"]);
  assert.deepEqual(pythonCandidates(undefined, "/env/py"), [
    "/env/py",
    "python3",
    "/usr/bin/python3",
  ]);
  assert.deepEqual(pythonCandidates(undefined, undefined), ["python3", "/usr/bin/python3"]);
  assert.deepEqual(pythonCandidates("", "python3"), ["python3", "/usr/bin/python3"]);
});

Deno.test("findTorchPython lists every candidate's answer when none has torch", async () => {
  const missing = "/nonexistent/python3";
  const err = await findTorchPython([missing, "false"]).then(
    () => assert.fail("expected TorchUnavailableError"),
    (e) => e,
  );
  assert.ok(err instanceof TorchUnavailableError);
  assert.deepEqual(err.tried.map((t) => t.python), [missing, "false"]);
  assert.equal(err.tried[0].reason, "not found");
  assert.match(err.message, /no Python with PyTorch found/);
  assert.match(err.message, /--python PATH/);
});

Deno.test("torchStepArgs passes the shape, steps and optimizer settings", () => {
  assert.deepEqual(torchStepArgs(OPTIONS), [
    "--model",
    "/m",
    "--tokens",
    "/t.u32",
    "--batch",
    "2",
    "--seq-len",
    "8",
    "--warmup",
    "1",
    "--steps",
    "3",
    "--lr",
    "0.001",
    "--device",
    "cpu",
  ]);
  const full = torchStepArgs({
    ...OPTIONS,
    threads: 2,
    adamw: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 1 },
  });
  assert.deepEqual(full.slice(16), [
    "--threads",
    "2",
    "--beta1",
    "0.9",
    "--beta2",
    "0.95",
    "--eps",
    "1e-8",
    "--weight-decay",
    "0.1",
    "--max-grad-norm",
    "1",
  ]);
});

/** A stand-in for the script: `sh SCRIPT args...` prints `stdout`, then exits with `code`. */
async function fakeScript(dir: string, stdout: string, code: number): Promise<string> {
  const path = `${dir}/fake.sh`;
  await Deno.writeTextFile(
    path,
    `printf '%s\\n' '${stdout}'\necho "args: $*" >&2\necho "llama_step.py: bad input" >&2\nexit ${code}\n`,
  );
  return path;
}

Deno.test("runTorchSteps parses the script's report and reports its failures", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const report = {
      engine: "pytorch-eager",
      version: "0",
      device: "cpu",
      deviceName: "cpu",
      params: 10,
      batch: 2,
      seqLen: 8,
      losses: [1, 0.9],
      gradNorm0: 1,
      gradNorms0: { w: 1 },
      stepMs: [5],
      medianStepMs: 5,
    };
    const ok = await runTorchSteps("sh", OPTIONS, {
      script: await fakeScript(dir, JSON.stringify(report), 0),
    });
    assert.deepEqual(ok, report);
    const err = await runTorchSteps("sh", OPTIONS, { script: await fakeScript(dir, "", 1) }).then(
      () => assert.fail("expected TorchRunError"),
      (e) => e,
    );
    assert.ok(err instanceof TorchRunError);
    assert.equal(err.code, 1);
    assert.match(
      err.message,
      /exited with status 1:\nargs: --model \/m .*\nllama_step.py: bad input/,
    );
    await assert.rejects(
      runTorchSteps("sh", OPTIONS, { script: await fakeScript(dir, "{}", 0) }),
      /llama_step.py: field "engine" must be a string/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
