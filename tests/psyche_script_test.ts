/**
 * `./psyche`, the README's front door, as a person runs it: its help lists every task of
 * deno.json, an unknown command is named and refused before anything is installed, and with
 * everything in place it runs the pinned Deno without installing anything again.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO_ROOT } from "../client/testnet/mod.ts";

const SCRIPT = join(REPO_ROOT, "psyche");

async function psyche(
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(SCRIPT, { args, cwd: REPO_ROOT }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

Deno.test("./psyche help names the two commands and every task of deno.json", async () => {
  const { code, stdout } = await psyche("help");
  assert.equal(code, 0);
  assert.match(stdout, /\.\/psyche demo/);
  assert.match(stdout, /\.\/psyche test/);
  const tasks = Object.keys(
    JSON.parse(await Deno.readTextFile(join(REPO_ROOT, "deno.json"))).tasks,
  );
  const listed = stdout.match(/^Tasks: (.*)$/m)?.[1].trim().split(/\s+/) ?? [];
  assert.deepEqual(listed.sort(), tasks.sort());
});

Deno.test("./psyche refuses an unknown command by name, before installing anything", async () => {
  const { code, stderr } = await psyche("dmeo");
  assert.equal(code, 1);
  assert.match(stderr, /no command "dmeo"/);
  assert.doesNotMatch(stderr, /installing/);
});

Deno.test("./psyche deno runs the pinned Deno and, with everything installed, installs nothing", async () => {
  const pinned = JSON.parse(await Deno.readTextFile(join(REPO_ROOT, ".tools", "package.json")))
    .dependencies.deno;
  await psyche("deno", "--version"); // installs whatever this machine still lacks, once
  const { code, stdout, stderr } = await psyche("deno", "--version");
  assert.equal(code, 0, stderr);
  assert.match(stdout, new RegExp(`^deno ${pinned.replaceAll(".", "\\.")} `));
  assert.doesNotMatch(stderr, /installing/);
});
