import assert from "node:assert/strict";
import type { Environment } from "./environment.ts";
import {
  type EntryResult,
  formatDuration,
  formatJson,
  formatMarkdown,
  type Report,
  reportOk,
} from "./format.ts";

const ENV: Environment = {
  cpu: { model: "AMD EPYC 7B13", cores: 2 },
  arch: "x86_64",
  memoryBytes: 24 * 2 ** 30,
  os: "Debian GNU/Linux 12 (bookworm), Linux 6.1.0",
  deno: { deno: "2.9.6", v8: "15.0.245.2-rusty", typescript: "6.0.3" },
  adapter: {
    vendor: "65541",
    architecture: "",
    device: "0",
    description: "llvmpipe (LLVM 15.0.6, 256 bits)",
  },
  mesa: "22.3.6",
  loadBefore: [1.5, 2, 3.25],
  loadAfter: [2.5, 2.25, 3.5],
  startedAt: "2026-11-26T00:55:07.000Z",
  endedAt: "2026-11-26T00:55:52.000Z",
};

const MATMUL: EntryResult = {
  id: "matmul",
  title: "matmul against TypeScript",
  file: "shaders/matmul_bench.ts",
  command: "deno bench -A --json --filter qkv shaders/matmul_bench.ts",
  figures: [
    {
      file: "shaders/matmul_bench.ts",
      group: "qkv",
      name: "gpu nt qkv",
      isBaseline: false,
      n: 11,
      avgNs: 46_612_345,
      minNs: 34_400_000,
      baseline: { name: "js nt qkv", avgNs: 275_000_000 },
      ratio: 46_612_345 / 275_000_000,
    },
    {
      file: "shaders/matmul_bench.ts",
      group: "qkv",
      name: "js nt qkv",
      isBaseline: true,
      n: 4,
      avgNs: 275_000_000,
      minNs: 269_000_000,
      baseline: null,
      ratio: null,
    },
    {
      file: "shaders/matmul_bench.ts",
      group: "",
      name: "a | b",
      isBaseline: false,
      n: 2000,
      avgNs: 812,
      minNs: 1_500,
      baseline: null,
      ratio: null,
    },
  ],
  failed: [],
  error: null,
  seconds: 4.4,
};

const BROKEN: EntryResult = {
  id: "distro",
  title: "DisTrO",
  file: "optimizer/distro_bench.ts",
  command: "deno bench -A --json optimizer/distro_bench.ts",
  figures: [],
  failed: [],
  error: "exit status 1: no `deno bench --json` document in the output",
  seconds: 12,
};

Deno.test("formatDuration: three significant digits in the unit that fits", () => {
  assert.deepEqual(
    [812, 1_500, 215_400, 9_290_000, 275e6, 1.05e9, 12.34e9].map(formatDuration),
    ["812 ns", "1.50 µs", "215 µs", "9.29 ms", "275 ms", "1.05 s", "12.3 s"],
  );
});

Deno.test("formatMarkdown: the environment first, then every figure beside its baseline", () => {
  const report: Report = {
    command: "deno task bench-report --quick",
    environment: ENV,
    entries: [MATMUL, BROKEN],
  };
  assert.equal(
    formatMarkdown(report),
    `#### \`deno task bench-report --quick\`, 2026-11-26 00:55 UTC

| environment | |
| --- | --- |
| date | 2026-11-26 00:55 UTC (45 s) |
| CPU | AMD EPYC 7B13, 2 cores (x86_64) |
| memory | 24.0 GiB |
| OS | Debian GNU/Linux 12 (bookworm), Linux 6.1.0 |
| Deno | 2.9.6 (V8 15.0.245.2-rusty, TypeScript 6.0.3) |
| WebGPU adapter | \`llvmpipe (LLVM 15.0.6, 256 bits)\` (vendor 65541, architecture -, device 0) |
| Mesa | 22.3.6 |
| load average (1 / 5 / 15 min) | 1.50 / 2.00 / 3.25 before, 2.50 / 2.25 / 3.50 after |

Times are per iteration; "÷ baseline" is the mean over its group's baseline mean, both from this run (under 1.00x: faster than the baseline).

**matmul**: matmul against TypeScript. \`deno bench -A --json --filter qkv shaders/matmul_bench.ts\`, 4 s.

| bench | mean | min | runs | baseline (same run): mean | ÷ baseline |
| --- | --: | --: | --: | --- | --: |
| gpu nt qkv | 46.6 ms | 34.4 ms | 11 | js nt qkv: 275 ms | 0.17x |
| js nt qkv | 275 ms | 269 ms | 4 | (this is the baseline) | 1.00x |
| a \\| b | 812 ns | 1.50 µs | 2000 | - | - |

**distro**: DisTrO. \`deno bench -A --json optimizer/distro_bench.ts\`, 12 s.

Failed: exit status 1: no \`deno bench --json\` document in the output
`,
  );
  assert.equal(reportOk(report), false);
  assert.equal(reportOk({ ...report, entries: [MATMUL] }), true);
});

Deno.test("formatMarkdown: no adapter and no Mesa are said, not left out", () => {
  const text = formatMarkdown({
    command: "deno task bench-report",
    environment: { ...ENV, adapter: null, mesa: null },
    entries: [],
  });
  assert.match(
    text,
    /\n\| WebGPU adapter \| none \(no WebGPU adapter\) \|\n\| Mesa \| unknown \|\n/,
  );
});

Deno.test("formatJson: the whole report, round-tripping", () => {
  const report: Report = { command: "deno task bench-report", environment: ENV, entries: [MATMUL] };
  assert.deepEqual(JSON.parse(formatJson(report)), report);
});
