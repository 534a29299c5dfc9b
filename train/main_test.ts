import assert from "node:assert/strict";
import { readModelDir } from "../model/checkpoint.ts";
import { readSafetensors } from "../model/safetensors.ts";
import { initParams } from "../model/params.ts";
import { scheduleFor, shuffleSeed } from "./main.ts";
import { learningRate } from "../coordinator/lr_schedule.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test("scheduleFor: warmup from 0, cosine and linear end at lr/10", () => {
  const o = { learningRate: 1e-3, warmupSteps: 10, steps: 110 };
  const cos = scheduleFor("cosine", o);
  assert.equal(learningRate(cos, 0), 0);
  assert.equal(learningRate(cos, 10), 1e-3);
  assert.ok(Math.abs(learningRate(cos, 110) - 1e-4) < 1e-12);
  assert.ok(Math.abs(learningRate(scheduleFor("linear", o), 60) - 5.5e-4) < 1e-12);
  assert.equal(learningRate(scheduleFor("constant", o), 100), 1e-3);
  // A run shorter than its warmup stays valid (and in warmup).
  assert.equal(learningRate(scheduleFor("cosine", { ...o, steps: 3 }), 3), 3e-4);
  assert.deepEqual([...shuffleSeed(0x01020304).subarray(26)], [0, 0, 1, 2, 3, 4]);
});

Deno.test("deno task train: JSON logs on generated tokens, saves a loadable model", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const T = 32;
    const tokens = Uint16Array.from({ length: 8 * T + 1 }, (_, i) => (i * 31 + 7) % 512);
    await Deno.mkdir(`${dir}/data`);
    await Deno.writeFile(`${dir}/data/train.bin`, new Uint8Array(tokens.buffer));
    const cmd = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}train/main.ts`,
        `--model=${ROOT}config/models/llama-tiny`,
        `--data-path=${dir}/data`,
        "--sequence-length=32",
        "--micro-batch=2",
        "--total-batch=4",
        "--steps=3",
        "--learning-rate=1e-3",
        "--warmup-steps=2",
        "--seed=3",
        `--save-path=${dir}/out`,
        "--save-dtype=bf16",
        "--logs=json",
      ],
      stdout: "piped",
      stderr: "piped",
    });
    const out = await cmd.output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const lines = stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => l.event), ["start", "step", "step", "step", "end"]);
    assert.equal(lines[0].weights, "seeded");
    for (const [i, l] of lines.slice(1, 4).entries()) {
      assert.equal(l.step, i + 1);
      for (const key of ["loss", "lr", "tokens_per_sec", "ms"]) {
        assert.ok(
          typeof l[key] === "number" && Number.isFinite(l[key]),
          `${key} in ${JSON.stringify(l)}`,
        );
      }
    }
    assert.deepEqual(lines.slice(1, 4).map((l) => l.lr), [5e-4, 1e-3, 1e-4]);
    const saved = await readModelDir(`${dir}/out`);
    const file = await readSafetensors(`${dir}/out/model.safetensors`);
    assert.equal(file.tensors.get("lm_head.weight")?.dtype, "BF16");
    const init = initParams(saved.layout, saved.config, 3);
    assert.ok(saved.weights !== null);
    assert.notDeepEqual(saved.weights, init); // trained, not the seeded init
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task train: bad flags and --optimizer distro fail with a clear message", async () => {
  const run = async (args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}train/main.ts`, ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
  };
  const bad = await run(["--model=x", "--data-path=y", "--token-size=3"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--token-size must be 2 or 4/);
  const missing = await run(["--model=/nonexistent", "--data-path=y"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /nonexistent/);
  const distro = await run(["--model=x", "--data-path=y", "--optimizer=distro"]);
  assert.equal(distro.code, 1);
  assert.match(distro.stderr, /--optimizer distro is not available yet/);
});
