/**
 * `bench-verify`'s two roles apart, as on two machines (docs/gpu-benchmarks.md, "Verification
 * across adapters"): the trainer role fills a folder in one process; later, the verifier role,
 * given nothing but that folder, checks every result in another process, on lavapipe's Vulkan
 * backend and on its GL backend. Honest results must all pass and every attack fail, as in the
 * combined bench (tests/verification_adapters_test.ts); a folder that is missing or from another
 * format is refused with a message saying so. Tiny settings (llama-micro, 6 steps, so the old
 * result's replay appears once): seconds on lavapipe.
 *
 * The GL half is skipped, saying why, where WebGPU has no GL adapter.
 *
 * @module
 */
import assert from "node:assert/strict";

const BENCH = new URL("../bench/verification/replay_bench.ts", import.meta.url).pathname;
const ATTACKS = ["negate", "scale", "other-data", "random-signs", "free-ride", "replay-old"];
const STEPS = 6;
const HONEST = 2;

interface Summary {
  readonly steps: number;
  readonly model: string;
  readonly verifierAdapter: string;
  readonly kinds: Record<string, { pass: number; fail: number; evidence: Record<string, number> }>;
}

async function bench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", BENCH, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

async function glAvailable(): Promise<boolean> {
  const probe = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "const a = await navigator.gpu.requestAdapter(); Deno.exit(a ? 0 : 3);"],
    env: { DENO_WEBGPU_BACKEND: "gl" },
    stdout: "null",
    stderr: "null",
  }).output();
  return probe.code === 0;
}

function assertVerdicts(s: Summary, backend: string): void {
  assert.match(s.verifierAdapter, new RegExp(` on ${backend}$`));
  assert.equal(s.steps, STEPS);
  assert.equal(s.model, "config/models/llama-micro");
  assert.deepEqual([s.kinds.honest.pass, s.kinds.honest.fail], [STEPS * HONEST, 0]);
  for (const kind of ATTACKS) {
    const k = s.kinds[kind];
    assert.ok(k !== undefined, `${backend}: no ${kind} results`);
    assert.equal(k.pass, 0, `${backend}: ${kind}: ${k.pass} passed`);
  }
  assert.equal(s.kinds["free-ride"].evidence.CopiedResult, STEPS);
}

Deno.test({
  name: "the roles apart: a trainer folder verified later on Vulkan and GL, attacks caught",
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "psyche-verify-split-" });
  try {
    const folder = `${dir}/run`;
    const trained = await bench([
      ...["--role", "trainer", "--dir", folder, "--model", "config/models/llama-micro"],
      ...["--steps", String(STEPS), "--honest", String(HONEST), "--seq-len", "32"],
    ]);
    assert.equal(trained.code, 0, trained.stderr);
    const again = await bench(["--role", "trainer", "--dir", folder]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /already holds a run \(manifest.json\): name a new folder/);
    for (const backend of ["vulkan", "gl"]) {
      await t.step({
        name: `verified on ${backend}`,
        ignore: backend === "gl" && !(await glAvailable()),
        fn: async () => {
          const v = await bench([
            "--role",
            "verifier",
            "--dir",
            folder,
            "--verifier-backend",
            backend,
            "--json",
          ]);
          assert.equal(v.code, 0, `${v.stdout}\n${v.stderr}`);
          assertVerdicts(JSON.parse(v.stdout.split("\n").at(-1)!) as Summary, backend);
        },
      });
    }
    // The verifier kept the folder: a second verification reads the same files.
    assert.ok((await Deno.stat(`${folder}/step-${STEPS}.json`)).isFile);

    const missing = await bench(["--role", "verifier", "--dir", `${dir}/none`]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /none does not exist: name the trainer role's folder/);
    const manifest = JSON.parse(await Deno.readTextFile(`${folder}/manifest.json`));
    await Deno.writeTextFile(`${folder}/manifest.json`, JSON.stringify({ ...manifest, format: 0 }));
    const old = await bench(["--role", "verifier", "--dir", folder]);
    assert.equal(old.code, 2);
    assert.match(old.stderr, /has format 0, this bench reads format 1/);
    await Deno.writeTextFile(`${folder}/manifest.json`, JSON.stringify(manifest));
    await Deno.remove(`${folder}/step-${STEPS}.json`);
    const cut = await bench([
      "--role",
      "verifier",
      "--dir",
      folder,
      "--verifier-backend",
      "vulkan",
    ]);
    assert.equal(cut.code, 2);
    assert.match(
      cut.stderr,
      new RegExp(`the trainer role stopped before step ${STEPS} of ${STEPS}`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
