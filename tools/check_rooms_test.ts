/**
 * The boundary check as CI runs it: a real `deno run` of tools/check_rooms.ts over a planted tree
 * (its own rules, real files, real imports read by `deno info`), and over the project itself.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";

const CHECK = new URL("./check_rooms.ts", import.meta.url).pathname;

async function check(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CHECK, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: result.code, out: text(result.stdout), err: text(result.stderr) };
}

async function plant(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await Deno.mkdir(join(root, dirname(path)), { recursive: true });
    await Deno.writeTextFile(join(root, path), text);
  }
}

Deno.test("a planted forbidden import fails the check, naming the file, the import and the rule", async () => {
  const dir = await Deno.makeTempDir({ prefix: "psyche-rooms-test-" });
  const root = join(dir, "house");
  const rules = join(dir, "rooms.ts");
  try {
    await Deno.writeTextFile(
      rules,
      `export const ROOMS = [
        { path: "core/", job: "pure logic", uses: [], pure: true },
        { path: "shell/", job: "the edge", uses: ["core/"] },
      ];`,
    );
    await plant(root, {
      "core/mod.ts": 'export { step } from "./step.ts";\n',
      "core/step.ts": "export const step = (n: number) => n + 1;\n",
      "shell/mod.ts": 'import { step } from "../core/mod.ts";\nexport const run = () => step(1);\n',
    });
    const clean = await check(["--root", root, "--rules", rules]);
    assert.equal(clean.code, 0, clean.err);
    assert.match(clean.out, /every rule kept/);

    // The core reaches up into the shell, and around the shell's face.
    await plant(root, {
      "core/step.ts": 'import { run } from "../shell/mod.ts";\nexport const step = run;\n',
      "shell/mod.ts":
        'import { step } from "../core/step.ts";\nexport const run = () => step(1);\n',
    });
    const broken = await check(["--root", root, "--rules", rules]);
    assert.equal(broken.code, 1);
    assert.match(
      broken.err,
      /core\/step\.ts:1 imports shell\/mod\.ts: core\/ may not use shell\/ \(it uses no other room\) \[rule: uses\]/,
    );
    assert.match(
      broken.err,
      /shell\/mod\.ts:1 imports core\/step\.ts: another room's internals: reach core\/ through core\/mod\.ts .*\[rule: face\]/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the project keeps every rule of tools/rooms.ts", async () => {
  const result = await check([]);
  assert.equal(result.code, 0, result.err);
});
