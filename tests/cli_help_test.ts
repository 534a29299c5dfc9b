/**
 * Every task of deno.json, run as a real process the way a user types it: `--help` exits 0 with
 * a usage naming the task and its flags, and a misspelt flag exits 2 suggesting the one meant.
 * The task list is read from deno.json, so a new task is covered (or must be named below).
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const TASKS: Record<string, string> = JSON.parse(
  await Deno.readTextFile(new URL("deno.json", ROOT)),
).tasks;

/** Tasks that run Deno's own tools (test, bench, fmt): their --help is Deno's. */
const DENO_TOOLS = new Set(["test", "bench", "bench-train", "stress", "check"]);

/** A flag each task's help must list, and the subcommand whose help is asked for, if any. */
const EXPECTED: Record<string, { flag: string; sub?: string }> = {
  coordinator: { sub: "run", flag: "--state" },
  client: { sub: "show-identity", flag: "--identity-secret-key-path" },
  testnet: { flag: "--num-clients" },
  demo: { flag: "--model" },
  "data-server": { flag: "--config" },
  tokenize: { flag: "--input" },
  "build-corpus": { flag: "--tokenizer" },
  train: { flag: "--data-path" },
  eval: { flag: "--tasks-dir" },
  generate: { flag: "--max-new-tokens" },
  "bench-torch": { flag: "--steps" },
  "bench-rounds": { flag: "--rounds" },
  "bench-throughput": { flag: "--steps" },
  "bench-coordinator-scale": { flag: "--clients" },
  "bench-report": { flag: "--quick" },
  "bench-link": { flag: "--rate" },
  netlab: { flag: "--clients" },
  "bench-relay": { flag: "--runs" },
  "bench-verify": { flag: "--steps" },
  "bench-verify-loss": { flag: "--steps" },
  "compare-optimizers": { flag: "--learning-rate" },
  "build-program": { flag: "--clang" },
  layout: { flag: "--check" },
  localnet: { flag: "--port" },
  solana: { sub: "create-run", flag: "--rpc" },
  dashboard: { flag: "--run-id" },
  rooms: { flag: "--root" },
};

async function task(name: string, args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", name, ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("every task of deno.json is listed here or runs a Deno tool", () => {
  for (const name of Object.keys(TASKS)) {
    assert.ok(DENO_TOOLS.has(name) || name in EXPECTED, `task "${name}" has no help check`);
  }
});

for (const [name, { flag, sub }] of Object.entries(EXPECTED)) {
  const prefix = sub === undefined ? [] : [sub];
  Deno.test(`deno task ${[name, ...prefix].join(" ")} --help and a misspelt flag`, async () => {
    assert.ok(name in TASKS, `deno.json has no task "${name}"`);
    for (const help of ["--help", "-h"]) {
      const r = await task(name, [...prefix, help]);
      assert.equal(r.code, 0, `${name} ${help}: ${r.stderr}`);
      const usage = `Usage: deno task ${name}${sub === undefined ? "" : ` ${sub}`}`;
      assert.ok(r.stdout.startsWith(usage), `${name} ${help} prints:\n${r.stdout}`);
      assert.match(r.stdout, new RegExp(`\\n {2,6}(-\\w, )?${flag}\\b`), `${flag} listed`);
      assert.match(r.stdout, /\n {2}-h, --help +show this help\n/);
    }
    const bad = await task(name, [...prefix, `${flag}x`]);
    assert.equal(bad.code, 2, `${name} ${flag}x: ${bad.stdout}${bad.stderr}`);
    assert.match(bad.stderr, new RegExp(`unknown flag ${flag}x \\(did you mean ${flag}\\?\\)`));
  });
}
