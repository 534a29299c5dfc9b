import assert from "node:assert/strict";
import { benchArgs, selectEntries, SUITE } from "./suite.ts";
import { BENCH_REPORT_SPEC, benchReportOptions } from "./cli.ts";
import { parseFlags } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";

Deno.test("selectEntries: --quick keeps the quick entries, --only narrows by id", () => {
  const ids = (q: boolean, only: string[] = []) =>
    selectEntries({ quick: q, only }).map((e) => e.id);
  assert.deepEqual(ids(false), SUITE.map((e) => e.id));
  assert.deepEqual(ids(true), ["coordinator-round", "state-encoding", "matmul", "client-round"]);
  assert.deepEqual(ids(false, ["distro", "matmul"]), ["matmul", "distro"]);
  assert.deepEqual(ids(true, ["distro"]), []);
  assert.throws(() => ids(false, ["matmull"]), /--only: no bench "matmull" \(expected one of/);
});

Deno.test("benchArgs: the quick filter under --quick, the full one otherwise", () => {
  const round = SUITE.find((e) => e.id === "coordinator-round")!;
  assert.deepEqual(benchArgs(round, false), [
    "bench",
    "-A",
    "--json",
    "--filter",
    "/^full round, /",
    "coordinator/core/machine_bench.ts",
  ]);
  assert.deepEqual(benchArgs(round, true).slice(3, 5), [
    "--filter",
    "/^full round, (32|1024) clients$/",
  ]);
  const distro = SUITE.find((e) => e.id === "distro")!;
  assert.deepEqual(benchArgs(distro, false), ["bench", "-A", "--json", distro.file]);
});

Deno.test("every suite entry's bench file exists and ids are unique", async () => {
  const root = new URL("../../", import.meta.url);
  for (const e of SUITE) assert.ok((await Deno.stat(new URL(e.file, root))).isFile, e.file);
  assert.equal(new Set(SUITE.map((e) => e.id)).size, SUITE.length);
});

Deno.test("benchReportOptions: flags and environment, an unknown --only is a usage error", () => {
  const parse = (argv: string[], env: Record<string, string> = {}) =>
    benchReportOptions(parseFlags(BENCH_REPORT_SPEC, argv, { env }));
  assert.deepEqual(parse([]), { quick: false, json: false, only: [] });
  assert.deepEqual(parse(["--quick", "--json", "--only", "matmul"]), {
    quick: true,
    json: true,
    only: ["matmul"],
  });
  assert.deepEqual(parse([], { PSYCHE_ONLY: "distro,matmul" }).only, ["distro", "matmul"]);
  assert.throws(() => parse(["--only", "nope"]), UsageError);
});
