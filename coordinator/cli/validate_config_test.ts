import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { main } from "./main.ts";
import { type CliIo, denoIo, EXIT_INVALID, EXIT_OK, EXIT_USAGE } from "../../cli/entry.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
/** Absolute path of a file in the repository, so the tests do not depend on the cwd. */
const repo = (path: string) => join(ROOT, path);

/** The real file system, with output captured. */
function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    readTextFile: denoIo.readTextFile,
    isDirectory: denoIo.isDirectory,
    out: (line) => stdout.push(...line.split("\n")),
    err: (line) => stderr.push(...line.split("\n")),
    stdout,
    stderr,
  };
}

const SEED = Array.from({ length: 32 }, (_, i) => i).join(", ");

/** A temp folder with a data.toml whose corpus folder holds two sequences of small token ids. */
async function dataConfigFixture(seqLen: number): Promise<{ path: string; root: string }> {
  const root = await Deno.makeTempDir({ prefix: "validate-config-" });
  await Deno.mkdir(join(root, "corpus"));
  const tokens = Uint16Array.from({ length: 2 * seqLen }, (_, i) => i % 500);
  await Deno.writeFile(join(root, "corpus", "000.ds"), new Uint8Array(tokens.buffer));
  const path = join(root, "data.toml");
  await Deno.writeTextFile(
    path,
    `dir = "corpus"\ntoken_size = "TwoBytes"\nseq_len = ${seqLen}\nshuffle_seed = [${SEED}]\n`,
  );
  return { path, root };
}

Deno.test("validate-config prints ok and a summary for a valid run config", async () => {
  const io = capture();
  const code = await main(["validate-config", "--state", repo("config/llama-tiny/state.toml")], io);
  assert.equal(code, EXIT_OK, io.stderr.join("\n"));
  assert.equal(io.stdout[0], `ok: ${repo("config/llama-tiny/state.toml")}`);
  assert.ok(
    io.stdout.some((line) => /run +llama-tiny-brown \(WaitingForMembers\), 200 steps/.test(line)),
  );
  assert.ok(
    io.stdout.some((line) => /optimizer +DisTrO chunk 64, top-k 8, 1-bit signs/.test(line)),
  );
  assert.deepEqual(io.stderr, []);
});

Deno.test("the bundled llama-tiny run and its data server config validate together", async () => {
  const io = capture();
  const code = await main([
    "validate-config",
    "--state",
    repo("config/llama-tiny/state.toml"),
    "--data-config",
    repo("config/llama-tiny/data.toml"),
  ], io);
  assert.equal(code, EXIT_OK, io.stderr.join("\n"));
  assert.ok(io.stdout.some((line) => line.includes(repo("data/corpus/brown/train"))));
  assert.ok(
    io.stdout.some((line) =>
      /vocabulary +token ids up to 29999 \(every token read\), model vocab_size 32000/.test(line)
    ),
    io.stdout.join("\n"),
  );
});

Deno.test("validate-config checks a data config and its fit with the run", async () => {
  const good = await dataConfigFixture(128);
  try {
    const io = capture();
    const code = await main([
      "validate-config",
      "--state",
      repo("config/llama-tiny/state.toml"),
      "--data-config",
      good.path,
    ], io);
    assert.equal(code, EXIT_OK, io.stderr.join("\n"));
    assert.ok(io.stdout.includes(`ok: ${good.path}`));
    assert.ok(io.stdout.some((line) => line.includes(join(good.root, "corpus"))));
  } finally {
    await Deno.remove(good.root, { recursive: true });
  }

  const mismatched = await dataConfigFixture(256);
  try {
    const io = capture();
    const code = await main([
      "validate-config",
      "--state",
      repo("config/psyche-production/state.toml"),
      "--data-config",
      mismatched.path,
    ], io);
    assert.equal(code, EXIT_INVALID);
    const text = io.stderr.join("\n");
    assert.match(text, /model\.LLM\.data_location = Http: a data config was given/);
    assert.match(text, /seq_len = 256: must equal the run's model\.LLM\.max_seq_len \(2048\)/);
  } finally {
    await Deno.remove(mismatched.root, { recursive: true });
  }
});

Deno.test("validate-config reports a data dir that does not exist", async () => {
  const fixture = await dataConfigFixture(128);
  try {
    await Deno.remove(join(fixture.root, "corpus"), { recursive: true });
    const io = capture();
    const args = ["--state", repo("config/llama-tiny/state.toml"), "--data-config", fixture.path];
    assert.equal(await main(["validate-config", ...args], io), EXIT_INVALID);
    assert.match(io.stderr.join("\n"), /- dir = ".*corpus": no such directory/);
  } finally {
    await Deno.remove(fixture.root, { recursive: true });
  }
});

Deno.test("validate-config prints every problem and exits 1", async () => {
  const io = capture();
  const state = repo("config/invalid/three-mistakes.toml");
  assert.equal(await main(["validate-config", "--state", state], io), EXIT_INVALID);
  assert.equal(io.stderr[0], `invalid: ${state}: 3 problems:`);
  assert.equal(io.stderr.filter((line) => line.startsWith("  - ")).length, 3);
  assert.deepEqual(io.stdout, []);
});

Deno.test("validate-config reports both files' problems together", async () => {
  const root = await Deno.makeTempDir({ prefix: "validate-config-" });
  try {
    const data = join(root, "data.toml");
    await Deno.writeTextFile(data, 'dir = "x"\ntoken_size = "OneByte"\n');
    const io = capture();
    const args = ["--state", repo("config/invalid/wrong-type.toml"), "--data-config", data];
    assert.equal(await main(["validate-config", ...args], io), EXIT_INVALID);
    const text = io.stderr.join("\n");
    assert.match(text, /config\.epoch_time = "120": expected seconds/);
    assert.match(text, /token_size = "OneByte"/);
    assert.match(text, /seq_len: missing/);
    assert.match(text, /shuffle_seed: missing/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("validate-config: unreadable files and bad arguments exit 2", async () => {
  const cases: [string[], RegExp][] = [
    [
      ["--state", "config/no-such-file.toml"],
      /cannot read run config "config\/no-such-file\.toml"/,
    ],
    [["--state", repo("config")], /cannot read run config ".*config": .*directory/],
    [
      ["--state", repo("config/llama-tiny/state.toml"), "--data-config", "nope/data.toml"],
      /cannot read data config "nope\/data\.toml"/,
    ],
    [[], /--state FILE is required/],
    [["--state"], /validate-config: .*state/],
    [["--state", "a", "--sate"], /unknown flag --sate \(did you mean --state\?\)/],
    [["extra"], /validate-config: .*extra/],
  ];
  for (const [args, pattern] of cases) {
    const io = capture();
    assert.equal(await main(["validate-config", ...args], io), EXIT_USAGE, args.join(" "));
    assert.match(io.stderr.join("\n"), pattern);
  }
});

Deno.test("help and unknown commands", async () => {
  const help = capture();
  assert.equal(await main(["validate-config", "--help"], help), EXIT_OK);
  assert.match(help.stdout.join("\n"), /Usage: deno task coordinator validate-config --state FILE/);

  const top = capture();
  assert.equal(await main(["--help"], top), EXIT_OK);
  assert.match(top.stdout.join("\n"), /validate-config +check a run config/);

  const none = capture();
  assert.equal(await main([], none), EXIT_USAGE);
  assert.match(none.stderr.join("\n"), /Usage: deno task coordinator <command>/);

  const unknown = capture();
  assert.equal(await main(["serve"], unknown), EXIT_USAGE);
  assert.match(unknown.stderr[0], /unknown command "serve"/);
});

Deno.test("the coordinator entry point exits with the command's status", async () => {
  const run = (args: string[]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", repo("coordinator/cli/main.ts"), ...args],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
  const ok = await run(["validate-config", "--state", repo("config/psyche-production/state.toml")]);
  assert.equal(ok.code, EXIT_OK, new TextDecoder().decode(ok.stderr));
  assert.match(new TextDecoder().decode(ok.stdout), /^ok: /);
  const bad = await run(["validate-config", "--state", repo("config/invalid/missing-key.toml")]);
  assert.equal(bad.code, EXIT_INVALID);
  assert.match(new TextDecoder().decode(bad.stderr), /config\.total_steps: missing/);
});

/** A temp state.toml (the llama-tiny run with `model` as its checkpoint) and a data.toml. */
async function vocabularyFixture(
  model: string,
): Promise<{ state: string; data: string; root: string }> {
  const root = await Deno.makeTempDir({ prefix: "validate-vocab-" });
  const state = join(root, "state.toml");
  const text = await Deno.readTextFile(repo("config/llama-tiny/state.toml"));
  await Deno.writeTextFile(
    state,
    text.replace('repo_id = "config/models/llama-20m"', `repo_id = ${JSON.stringify(model)}`),
  );
  const data = join(root, "data.toml");
  await Deno.writeTextFile(
    data,
    `dir = ${JSON.stringify(repo("data/corpus/brown/train"))}\ntoken_size = "TwoBytes"\n` +
      `seq_len = 128\nshuffle_seed = [${SEED}]\n`,
  );
  return { state, data, root };
}

Deno.test("validate-config refuses a 512-token model paired with LLaMA-2 token ids", async () => {
  const { state, data, root } = await vocabularyFixture(repo("config/models/llama-tiny"));
  try {
    const io = capture();
    const code = await main(["validate-config", "--state", state, "--data-config", data], io);
    assert.equal(code, EXIT_INVALID, io.stdout.join("\n"));
    const text = io.stderr.join("\n");
    assert.match(text, new RegExp(`invalid: ${data}: 1 problem:`));
    assert.match(
      text,
      /dir = ".*brown\/train": holds token id 29999 \(.*000\.ds, byte offset \d+\), outside the model's vocabulary: vocab_size 512 in .*llama-tiny\/config\.json; every batch would fail/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("validate-config says when the model is not here to check its vocabulary", async () => {
  const { state, data, root } = await vocabularyFixture("no-such-org/no-such-model");
  try {
    const io = capture();
    const code = await main(["validate-config", "--state", state, "--data-config", data], io);
    assert.equal(code, EXIT_OK, io.stderr.join("\n"));
    assert.match(
      io.stdout.join("\n"),
      /vocabulary +not checked: Hub repo "no-such-org\/no-such-model" is not available locally/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
