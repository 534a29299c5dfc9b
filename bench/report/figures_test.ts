import assert from "node:assert/strict";
import { BenchOutputError, parseBenchJson } from "./figures.ts";

const ROOT = "file:///repo/";

function bench(name: string, group: string | null, baseline: boolean, avg: number) {
  return {
    origin: `${ROOT}shaders/matmul_bench.ts`,
    group,
    name,
    baseline,
    results: [{ ok: { n: 10, min: avg / 2, max: avg * 2, avg, p75: avg, p99: avg } }],
  };
}

/** What `deno bench --json` writes: the module's console output, then the document. */
function stdout(benches: unknown[], version = 1): string {
  const doc = { version, runtime: "Deno/2.9.6", cpu: "AMD EPYC", benches };
  return `adapter: llvmpipe\n${JSON.stringify(doc, null, 2)}\n`;
}

Deno.test("parseBenchJson: each bench against its group's baseline, after the module's output", () => {
  const run = parseBenchJson(
    stdout([
      bench("gpu nt", "qkv", false, 40e6),
      bench("js nt", "qkv", true, 200e6),
      bench("alone", null, false, 5e3),
    ]),
    ROOT,
  );
  assert.deepEqual(run.failed, []);
  assert.deepEqual(run.figures, [
    {
      file: "shaders/matmul_bench.ts",
      group: "qkv",
      name: "gpu nt",
      isBaseline: false,
      n: 10,
      avgNs: 40e6,
      minNs: 20e6,
      baseline: { name: "js nt", avgNs: 200e6 },
      ratio: 0.2,
    },
    {
      file: "shaders/matmul_bench.ts",
      group: "qkv",
      name: "js nt",
      isBaseline: true,
      n: 10,
      avgNs: 200e6,
      minNs: 100e6,
      baseline: null,
      ratio: null,
    },
    {
      file: "shaders/matmul_bench.ts",
      group: "",
      name: "alone",
      isBaseline: false,
      n: 10,
      avgNs: 5e3,
      minNs: 2.5e3,
      baseline: null,
      ratio: null,
    },
  ]);
});

Deno.test("parseBenchJson: a baseline of another group is not this group's", () => {
  const run = parseBenchJson(
    stdout([bench("a", "one", false, 2), bench("b", "two", true, 1)]),
    ROOT,
  );
  assert.equal(run.figures[0].baseline, null);
});

Deno.test("parseBenchJson: a bench that threw is listed with its message", () => {
  const failedBench = { ...bench("broken", "g", false, 1), results: [{ failed: "Error: boom" }] };
  const run = parseBenchJson(stdout([failedBench, bench("fine", "g", true, 1)]), ROOT);
  assert.deepEqual(run.failed, [
    { file: "shaders/matmul_bench.ts", name: "broken", error: "Error: boom" },
  ]);
  assert.deepEqual(run.figures.map((f) => f.name), ["fine"]);
});

Deno.test("parseBenchJson: output of another shape is a BenchOutputError naming what is wrong", () => {
  assert.throws(() => parseBenchJson("error: Module not found\n", ROOT), {
    name: "BenchOutputError",
    message: "no `deno bench --json` document in the output",
  });
  assert.throws(
    () => parseBenchJson(stdout([], 2), ROOT),
    /expected bench JSON version 1, found 2/,
  );
  assert.throws(
    () => parseBenchJson(stdout([{ name: "x", results: [] }]), ROOT),
    /bench 0 lacks origin, name or results/,
  );
  const nan = { ...bench("x", null, false, 1), results: [{ ok: { n: 10, min: 1 } }] };
  assert.throws(() => parseBenchJson(stdout([nan]), ROOT), BenchOutputError);
});
