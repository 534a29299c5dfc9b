/**
 * The layout tables of README.md and docs/architecture.md against the tree and tools/rooms.ts:
 * every folder they list exists, every top folder and every room is listed, and the floors table
 * of docs/architecture.md is the one the rooms' `uses` give.
 */
import assert from "node:assert/strict";
import { isTestCode } from "./room_check.ts";
import { ROOMS } from "./rooms.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const read = (path: string) => Deno.readTextFileSync(`${ROOT}${path}`);

/** The backticked folders in the first column of every table of `markdown`. */
function tableFolders(markdown: string): string[] {
  return [...markdown.matchAll(/^\| `([\w/-]+\/)` +\|/gm)].map((m) => m[1]);
}

/** The folders under the repository root that hold tracked files. */
async function topFolders(): Promise<string[]> {
  const out = await new Deno.Command("git", { args: ["ls-files"], cwd: ROOT, stdout: "piped" })
    .output();
  const files = new TextDecoder().decode(out.stdout).split("\n").filter((f) => f.includes("/"));
  return [...new Set(files.map((f) => f.split("/")[0] + "/"))].filter((d) => !d.startsWith("."))
    .sort();
}

async function exists(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(`${ROOT}${path}`)).isDirectory;
  } catch {
    return false;
  }
}

Deno.test("README's layout table lists every top folder, and only folders that exist", async () => {
  const listed = tableFolders(read("README.md"));
  assert.deepEqual([...listed].sort(), await topFolders());
});

Deno.test("docs/architecture.md lists every room of tools/rooms.ts, and only folders that exist", async () => {
  const listed = new Set(tableFolders(read("docs/architecture.md")));
  for (const room of ROOMS) assert.ok(listed.has(room.path), `${room.path} is not in the tables`);
  for (const folder of listed) assert.ok(await exists(folder), `${folder} does not exist`);
  for (const top of await topFolders()) assert.ok(listed.has(top), `${top} is not in the tables`);
});

Deno.test("docs/architecture.md's floors are the ones tools/rooms.ts's uses give", async () => {
  const floor = new Map<string, number>();
  const floorOf = (path: string): number => {
    const known = floor.get(path);
    if (known !== undefined) return known;
    const room = ROOMS.find((r) => r.path === path)!;
    const value = 1 + Math.max(0, ...room.uses.map(floorOf));
    floor.set(path, value);
    return value;
  };
  // Rooms with product code: some .ts file that is not test code.
  const out = await new Deno.Command("git", {
    args: ["ls-files", "*.ts"],
    cwd: ROOT,
    stdout: "piped",
  })
    .output();
  const product = new TextDecoder().decode(out.stdout).split("\n")
    .filter((f) => f !== "" && !isTestCode(f));
  const expected = new Map<number, string[]>();
  for (const room of ROOMS) {
    if (
      !product.some((f) =>
        f.startsWith(room.path) &&
        !ROOMS.some((r) =>
          r.path.length > room.path.length && r.path.startsWith(room.path) && f.startsWith(r.path)
        )
      )
    ) continue;
    const n = floorOf(room.path);
    expected.set(n, [...(expected.get(n) ?? []), room.path].sort());
  }
  const documented = new Map<number, string[]>();
  for (const m of read("docs/architecture.md").matchAll(/^\| +(\d+) \| (.+?) +\|$/gm)) {
    documented.set(Number(m[1]), [...m[2].matchAll(/`([\w/-]+)`/g)].map((x) => x[1]).sort());
  }
  assert.deepEqual(documented, expected);
});
