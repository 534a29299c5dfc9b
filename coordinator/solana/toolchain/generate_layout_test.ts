import assert from "node:assert/strict";
import {
  DOCS_BEGIN,
  DOCS_END,
  DOCS_PATH,
  HEADER_PATH,
  layoutHeader,
  main,
  staleLayoutFiles,
  withLayoutDocs,
} from "./generate_layout.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const read = (path: string) => Deno.readTextFileSync(`${ROOT}/${path}`);

Deno.test("layout.h and the docs' layout section are what the table makes", () => {
  assert.deepEqual(staleLayoutFiles(read).map((f) => f.path), []);
});

Deno.test("a header or docs section that drifted from the table is named", () => {
  const header = read(HEADER_PATH).replace("== 218040", "== 218044");
  const docs = read(DOCS_PATH).replace("| 218040 |", "| 218044 |");
  assert.notEqual(header, read(HEADER_PATH));
  assert.notEqual(docs, read(DOCS_PATH));
  const stale = (files: Record<string, string>) =>
    staleLayoutFiles((path) => files[path] ?? read(path)).map((f) => f.path);
  assert.deepEqual(stale({ [HEADER_PATH]: header }), [HEADER_PATH]);
  assert.deepEqual(stale({ [DOCS_PATH]: docs }), [DOCS_PATH]);
  assert.deepEqual(stale({ [HEADER_PATH]: header, [DOCS_PATH]: docs }), [HEADER_PATH, DOCS_PATH]);
  // Text outside the markers is the docs' own: editing it is not drift.
  assert.deepEqual(stale({ [DOCS_PATH]: read(DOCS_PATH) + "\nA new paragraph.\n" }), []);
  assert.throws(() => withLayoutDocs("# no markers\n"), /has no .*layout:begin/);
});

Deno.test("--check exits 1 naming a stale file and writes nothing; a plain run rewrites it", async () => {
  const root = await Deno.makeTempDir({ prefix: "psyche-layout-" });
  try {
    await Deno.mkdir(`${root}/coordinator/solana/program`, { recursive: true });
    await Deno.mkdir(`${root}/docs`);
    const stale = layoutHeader().replace("#define MAX_CLIENTS 256", "#define MAX_CLIENTS 255");
    await Deno.writeTextFile(`${root}/${HEADER_PATH}`, stale);
    await Deno.writeTextFile(`${root}/${DOCS_PATH}`, `# x\n\n${DOCS_BEGIN}\n${DOCS_END}\n`);
    const errors: string[] = [];
    const original = console.error;
    console.error = (line: string) => errors.push(line);
    let code: number;
    try {
      code = await main(["--check"], root);
    } finally {
      console.error = original;
    }
    assert.equal(code, 1);
    assert.deepEqual(errors, [
      `${HEADER_PATH} does not match coordinator/solana/abi/layout.ts: run \`deno task layout\``,
      `${DOCS_PATH} does not match coordinator/solana/abi/layout.ts: run \`deno task layout\``,
    ]);
    assert.equal(await Deno.readTextFile(`${root}/${HEADER_PATH}`), stale);
    const log = console.log;
    console.log = () => {};
    try {
      assert.equal(await main([], root), 0);
      assert.equal(await main(["--check"], root), 0);
    } finally {
      console.log = log;
    }
    assert.equal(await Deno.readTextFile(`${root}/${HEADER_PATH}`), layoutHeader());
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
