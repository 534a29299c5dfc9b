import assert from "node:assert/strict";
import { parseTrainArgs, type TrainOptions } from "./cli.ts";
import { readTrainingCheckpoint } from "./testing/whole_checkpoint.ts";
import { train } from "./main.ts";
import { OPTIMIZER_FILE, TRAINER_STATE_FILE } from "./train_state.ts";
import { WEIGHTS_FILE } from "../model/mod.ts";

const TINY = new URL("../config/models/llama-tiny", import.meta.url).pathname;

/** 7 sequences of 16 tokens (vocab 512): a 4-sequence step wraps past the end every other step. */
async function tokenFolder(dir: string): Promise<string> {
  const tokens = Uint16Array.from({ length: 7 * 16 + 1 }, (_, i) => (i * 7919 + 13) % 512);
  await Deno.mkdir(`${dir}/data`);
  await Deno.writeFile(`${dir}/data/000.ds`, new Uint8Array(tokens.buffer));
  return `${dir}/data`;
}

function options(dir: string, optimizer: string, extra: string[]): TrainOptions {
  const o = parseTrainArgs([
    `--model=${TINY}`,
    `--data-path=${dir}/data`,
    "--sequence-length=16",
    "--micro-batch=2",
    "--total-batch=4",
    "--steps=10",
    `--optimizer=${optimizer}`,
    "--learning-rate=3e-3",
    "--warmup-steps=3",
    "--lr-schedule=cosine",
    "--compression-chunk=16",
    "--compression-topk=4",
    "--seed=4",
    "--logs=json",
    ...extra,
  ]);
  if (o === "help") throw new Error("unreachable");
  return o;
}

const read = (path: string) => Deno.readFile(path);

for (const optimizer of ["adamw", "distro"]) {
  Deno.test(`${optimizer}: 10 steps straight equal 5 steps, an interrupt and 5 resumed steps, bit for bit`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      await tokenFolder(dir);
      // Straight, with periodic saves in between (which must not disturb the run).
      const straight = await train(
        options(dir, optimizer, [`--save-path=${dir}/straight`, "--save-every=3"]),
        { write: () => {} },
      );
      assert.equal(straight.lastStep, 10);
      // Interrupted after step 5: the stop signal arrives while step 5 is logged, as SIGINT would.
      const stop = new AbortController();
      const lines: string[] = [];
      const first = await train(options(dir, optimizer, [`--save-path=${dir}/resumable`]), {
        write: (l) => {
          lines.push(l);
          const e = JSON.parse(l);
          if (e.event === "step" && e.step === 5) stop.abort();
        },
        stop: stop.signal,
      });
      assert.deepEqual([first.lastStep, first.stopped, first.savedTo], [
        5,
        true,
        `${dir}/resumable`,
      ]);
      const events = lines.map((l) => JSON.parse(l));
      const { time: _, ...checkpoint } = events.at(-2);
      assert.deepEqual(checkpoint, {
        level: "info",
        event: "checkpoint",
        step: 5,
        dir: `${dir}/resumable`,
        reason: "interrupt",
      });
      assert.equal(events.at(-1).interrupted, true);
      // The save said how far it got (throttled: here only its end), before it said it was done.
      const { time: _t, ...saving } = events.at(-3);
      assert.equal(saving.event, "checkpoint_progress");
      assert.deepEqual([saving.step, saving.dir], [5, `${dir}/resumable`]);
      assert.ok(saving.total_bytes > 0 && saving.done_bytes === saving.total_bytes);
      const saved = await readTrainingCheckpoint(`${dir}/resumable`, {
        optimizer: optimizer as "adamw" | "distro",
        chunking: { chunk: 16, topk: 4 },
      });
      assert.equal(saved.trainer.step, 5);
      assert.equal(saved.trainer.data.nextSequence, (5 * 4) % 7);
      // Resumed into the same folder (the default save path of --resume).
      const resumedLines: string[] = [];
      const second = await train(options(dir, optimizer, [`--resume=${dir}/resumable`]), {
        write: (l) => resumedLines.push(l),
      });
      assert.equal(second.lastStep, 10);
      // The weights, then the optimizer state, went up with their progress said.
      const uploads = resumedLines.map((l) => JSON.parse(l)).filter((e) => e.event === "upload");
      assert.deepEqual(uploads.map((e) => e.what), ["weights", "optimizer"]);
      assert.ok(uploads.every((e) => e.total_bytes > 0 && e.done_bytes === e.total_bytes));
      assert.deepEqual([...first.losses, ...second.losses], straight.losses);
      for (const file of [WEIGHTS_FILE, OPTIMIZER_FILE, TRAINER_STATE_FILE]) {
        assert.deepEqual(
          await read(`${dir}/resumable/${file}`),
          await read(`${dir}/straight/${file}`),
          `${file} differs`,
        );
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("--resume alone takes the optimizer, batch geometry and shuffle from the checkpoint: the same bits", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await tokenFolder(dir);
    const straight = await train(
      options(dir, "adamw", ["--steps=4", `--save-path=${dir}/straight`]),
      { write: () => {} },
    );
    await train(options(dir, "adamw", ["--steps=2", `--save-path=${dir}/ck`]), {
      write: () => {},
    });
    // Only what the trainer state does not hold: the data, the last step, the learning rate.
    const flags = parseTrainArgs([
      `--resume=${dir}/ck`,
      `--data-path=${dir}/data`,
      "--steps=4",
      "--learning-rate=3e-3",
      "--warmup-steps=3",
      "--lr-schedule=cosine",
      "--logs=json",
    ]);
    assert.ok(flags !== "help");
    const lines: string[] = [];
    const resumed = await train(flags, { write: (l) => lines.push(l) });
    assert.deepEqual(resumed.losses, straight.losses.slice(2));
    const start = lines.map((l) => JSON.parse(l)).find((e) => e.event === "start");
    assert.deepEqual(
      [start.total_batch, start.micro_batch, start.sequence_length, start.from_checkpoint],
      [4, 2, 16, [
        "--optimizer adamw",
        "--total-batch 4",
        "--micro-batch 2",
        "--sequence-length 16",
        "--seed 4",
      ]],
    );
    for (const file of [WEIGHTS_FILE, OPTIMIZER_FILE]) {
      assert.deepEqual(await read(`${dir}/ck/${file}`), await read(`${dir}/straight/${file}`));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--resume refuses a checkpoint that does not fit, naming what is wrong", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await tokenFolder(dir);
    await train(options(dir, "adamw", [`--save-path=${dir}/ck`, "--steps=2"]), {
      write: () => {},
    });
    const resume = (extra: string[]) =>
      train(options(dir, "adamw", [`--resume=${dir}/ck`, ...extra]), { write: () => {} });
    await assert.rejects(
      () => resume(["--optimizer=distro"]),
      /trained with --optimizer adamw, this run uses --optimizer distro/,
    );
    await assert.rejects(() => resume(["--total-batch=2"]), /it used --total-batch 4, this run 2/);
    await assert.rejects(() => resume(["--steps=2"]), /at step 2, --steps 2 leaves nothing/);
    await assert.rejects(() => resume(["--seed=5"]), /shuffled with --seed 4, this run --seed 5/);
    // --model names another model: refused from the configs alone.
    const mini = new URL("../config/models/llama-mini", import.meta.url).pathname;
    await assert.rejects(
      () => resume([`--model=${mini}`]),
      /--model .*llama-mini is not the model of --resume .*\/ck: /,
    );
    // A tensor of the wrong shape: the optimizer file of another model.
    const { readSafetensors, writeSafetensors } = await import("../model/mod.ts");
    const file = await readSafetensors(`${dir}/ck/${OPTIMIZER_FILE}`);
    const name = "model.norm.weight.exp_avg";
    const t = file.tensors.get(name)!;
    file.tensors.set(name, { ...t, shape: [t.shape[0] / 2, 2] });
    await writeSafetensors(`${dir}/ck/${OPTIMIZER_FILE}`, file);
    await assert.rejects(() => resume([]), /tensor "model\.norm\.weight\.exp_avg" has shape \[/);
    file.tensors.delete(name);
    await writeSafetensors(`${dir}/ck/${OPTIMIZER_FILE}`, file);
    await assert.rejects(() => resume([]), /tensor "model\.norm\.weight\.exp_avg" is missing/);
    // Truncated files are refused by name from their headers, before any data is read.
    const cut = async (path: string) => await Deno.truncate(path, (await Deno.stat(path)).size - 4);
    await cut(`${dir}/ck/${OPTIMIZER_FILE}`);
    await assert.rejects(() => resume([]), /Cannot load ".*\/ck\/optimizer\.safetensors"/);
    await Deno.remove(`${dir}/ck/${TRAINER_STATE_FILE}`);
    await assert.rejects(() => resume([]), /no trainer_state\.json \(a model folder/);
    await cut(`${dir}/ck/${WEIGHTS_FILE}`);
    await assert.rejects(() => resume([]), /Cannot load ".*\/ck\/model\.safetensors"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
