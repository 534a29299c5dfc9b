/**
 * `deno task check` (and CI) runs this: it reads the project's module graph with `deno info`
 * (the resolver Deno itself uses, so every import counts: static, dynamic and `import type`),
 * holds it to the room rules of tools/rooms.ts (tools/room_check.ts), and exits 1 after printing
 * one line per broken rule, naming the file, the line, the import and the rule.
 *
 * `--root DIR` checks another tree and `--rules FILE` takes the rooms from another module (one
 * that exports `ROOMS`); the tests use both to plant violations in a tree of their own.
 *
 * @module
 */
import { denoEnv, parseOrExit } from "../cli/entry.ts";
import { join, relative, resolve } from "node:path";
import { fileURLToPath as fromFileUrl, pathToFileURL } from "node:url";
import {
  checkRooms,
  formatViolation,
  type HouseGraph,
  type Import,
  type Violation,
} from "./room_check.ts";
import type { Room } from "./rooms.ts";

const SKIP = new Set(["node_modules", ".git", ".tools"]);

/** Every `.ts` file under `root`, as root-relative paths (dot folders and packages skipped). */
export async function sourceFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(join(root, dir))) {
      if (entry.name.startsWith(".") || SKIP.has(entry.name)) continue;
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && path.endsWith(".ts")) out.push(path);
    }
  };
  await walk("");
  return out.sort();
}

/** `npm:/@solana/kit@8.4.0/x` → `npm:@solana/kit`; other outside specifiers unchanged. */
export function packageOf(specifier: string): string {
  const m = /^(npm|jsr):\/?((?:@[^/@]+\/)?[^/@]+)/.exec(specifier);
  return m === null ? specifier : `${m[1]}:${m[2]}`;
}

interface InfoDependency {
  code?: { specifier: string; span: { start: { line: number } } };
  type?: { specifier: string; span: { start: { line: number } } };
}
interface InfoModule {
  specifier: string;
  dependencies?: InfoDependency[];
}

/** The module graph of the `.ts` files under `root`, read with `deno info --json`. */
export async function readHouse(root: string): Promise<HouseGraph> {
  const paths = await sourceFiles(root);
  const dir = await Deno.makeTempDir({ prefix: "psyche-rooms-" });
  try {
    const entry = join(dir, "entry.ts");
    await Deno.writeTextFile(
      entry,
      paths.map((p) => `import ${JSON.stringify(pathToFileURL(join(root, p)).href)};`).join("\n"),
    );
    const args = ["info", "--json"];
    try {
      await Deno.stat(join(root, "deno.json"));
      args.push("--config", join(root, "deno.json"));
    } catch {
      // A tree without deno.json (the tests' planted trees) resolves relative imports only.
    }
    const result = await new Deno.Command(Deno.execPath(), {
      args: [...args, entry],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!result.success) {
      throw new Error(`deno info failed: ${new TextDecoder().decode(result.stderr)}`);
    }
    const info = JSON.parse(new TextDecoder().decode(result.stdout)) as { modules: InfoModule[] };
    const rootUrl = pathToFileURL(root.endsWith("/") ? root : `${root}/`).href;
    const imports: Import[] = [];
    for (const module of info.modules) {
      if (!module.specifier.startsWith(rootUrl)) continue;
      const from = relative(root, fromFileUrl(module.specifier));
      for (const dep of module.dependencies ?? []) {
        for (const resolved of [dep.code, dep.type]) {
          if (resolved === undefined) continue;
          const to = resolved.specifier.startsWith(rootUrl)
            ? relative(root, fromFileUrl(resolved.specifier))
            : resolved.specifier.startsWith("file:")
            ? resolved.specifier
            : packageOf(resolved.specifier);
          const line = resolved.span.start.line + 1;
          if (!imports.some((i) => i.from === from && i.to === to && i.line === line)) {
            imports.push({ from, to, line });
          }
        }
      }
    }
    const files = await Promise.all(
      paths.map(async (path) => ({ path, text: await Deno.readTextFile(join(root, path)) })),
    );
    return { files, imports };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Rooms whose folder does not exist under `root`. */
async function missingRooms(root: string, rooms: readonly Room[]): Promise<Violation[]> {
  const out: Violation[] = [];
  for (const room of rooms) {
    try {
      if ((await Deno.stat(join(root, room.path))).isDirectory) continue;
    } catch {
      // reported below
    }
    out.push({
      file: "tools/rooms.ts",
      line: 0,
      found: "",
      rule: "rules",
      message: `room ${room.path} has no folder`,
    });
  }
  return out;
}

/** The flags of `deno task rooms`. */
export const ROOMS_SPEC = {
  usage: "deno task rooms [--root DIR] [--rules FILE]",
  summary: "Reads the module graph with `deno info` and holds it to the room rules of " +
    "tools/rooms.ts: one line per broken rule, naming the file, the line, the import and the rule.",
  flags: {
    root: {
      type: "string",
      value: "DIR",
      description: "the tree to check",
      defaultText: "this repository",
    },
    rules: {
      type: "string",
      value: "FILE",
      description: "a module exporting ROOMS to check against",
      defaultText: "tools/rooms.ts",
    },
  },
  footer: "Exit status: 0 every rule kept, 1 a rule broken, 2 bad arguments.",
} as const;

/** Checks `root` against the rooms `rulesModule` exports; resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  const values = parseOrExit(ROOMS_SPEC, (p) => p.values, { argv, env: denoEnv });
  const root = values.root ?? fromFileUrl(new URL("../", import.meta.url));
  const rulesUrl = values.rules === undefined
    ? new URL("./rooms.ts", import.meta.url).href
    : pathToFileURL(resolve(values.rules)).href;
  const { ROOMS } = await import(rulesUrl) as { ROOMS: readonly Room[] };
  const graph = await readHouse(root);
  const violations = [...await missingRooms(root, ROOMS), ...checkRooms(graph, ROOMS)];
  for (const v of violations) console.error(formatViolation(v));
  if (violations.length > 0) {
    console.error(`${violations.length} broken room rule(s); the rules are in tools/rooms.ts`);
    return 1;
  }
  console.log(
    `rooms: ${graph.files.length} files, ${graph.imports.length} imports, every rule kept`,
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
