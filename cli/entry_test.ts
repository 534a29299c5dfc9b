import assert from "node:assert/strict";

const ENTRY = new URL("./entry.ts", import.meta.url).href;

/** Runs a script whose parser throws on `--bad`, answers "help" to `--help`, else echoes. */
async function run(args: string[]) {
  const script = `import { parseArgsOrExit } from "${ENTRY}";
const parse = (argv: string[]) => {
  if (argv.includes("--bad")) throw new Error("--bad is not a flag");
  return argv.includes("--help") ? "help" : { flags: argv };
};
console.log(JSON.stringify(parseArgsOrExit(parse, "usage: demo [--help]")));`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("parseArgsOrExit: parsed options, the usage on --help, status 2 on a bad flag", async () => {
  const ok = await run(["--x"]);
  assert.equal(ok.code, 0);
  assert.deepEqual(JSON.parse(ok.stdout), { flags: ["--x"] });
  const help = await run(["--help"]);
  assert.equal(help.code, 0);
  assert.equal(help.stdout, "usage: demo [--help]\n");
  const bad = await run(["--bad"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--bad is not a flag\n\nusage: demo \[--help\]/);
  assert.equal(bad.stdout, "");
});
