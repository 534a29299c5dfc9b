/**
 * The lent GPU machine reaches no registry, so `run.sh` runs every entry point with
 * `--no-config` and this folder's small import map (docs/gpu-benchmarks.md). A bare import the map
 * lacks fails there at once, after the machine's start has been paid for (2026-11-30: `hyparquet`,
 * which the DisTrO bench and `compare.ts` reach through data/, cost the call its three parts).
 * Here every entry point `run.sh` starts is resolved through the map, and any import that would
 * not resolve is named.
 */

import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url);

/** The `.ts` entry points `run.sh` starts with `$deno_run`. */
async function entryPoints(): Promise<string[]> {
  const script = await Deno.readTextFile(new URL("bench/gpu/run.sh", root));
  const found = new Set<string>();
  for (const m of script.matchAll(/\$deno_run (\S+\.ts)/g)) found.add(m[1]);
  return [...found].sort();
}

interface InfoDependency {
  specifier: string;
  code?: { error?: string };
  type?: { error?: string };
}

interface InfoModule {
  specifier: string;
  error?: string;
  dependencies?: InfoDependency[];
}

/** Every unresolved import of `entry`'s module graph under the GPU import map. */
async function unresolved(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "info",
      "--json",
      "--no-config",
      "--no-lock",
      "--node-modules-dir=none",
      "--import-map",
      "bench/gpu/import_map.json",
      entry,
    ],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) return [`deno info failed: ${new TextDecoder().decode(out.stderr)}`];
  const graph = JSON.parse(new TextDecoder().decode(out.stdout)) as { modules: InfoModule[] };
  const errors: string[] = [];
  for (const m of graph.modules) {
    if (m.error) errors.push(m.error);
    for (const d of m.dependencies ?? []) {
      for (const e of [d.code?.error, d.type?.error]) if (e) errors.push(e);
    }
  }
  return errors;
}

Deno.test("run.sh starts entry points, and the list is not empty", async () => {
  const entries = await entryPoints();
  for (const e of ["bench/step_profile.ts", "optimizer/distro_bench.ts"]) {
    assert.ok(entries.includes(e), `${e} missing from ${entries.join(", ")}`);
  }
});

Deno.test("every entry point run.sh starts resolves through the GPU import map", async () => {
  const failures: string[] = [];
  for (const entry of await entryPoints()) {
    for (const e of await unresolved(entry)) failures.push(`${entry}: ${e}`);
  }
  assert.deepEqual(failures, []);
});
