import assert from "node:assert/strict";

const MOD = new URL("./mod.ts", import.meta.url).href;
const WARNING = "XDG_RUNTIME_DIR is invalid or not set";

/** Runs `script` in a child whose only environment is ours but for XDG_RUNTIME_DIR = `xdg`. */
async function child(script: string, xdg?: string) {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "TMPDIR", "DENO_DIR", "DENO_WEBGPU_BACKEND"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  if (xdg !== undefined) env.XDG_RUNTIME_DIR = xdg;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** Runs a child that opens the GPU through GpuRuntime, with `xdg` as its XDG_RUNTIME_DIR. */
function gpuChild(xdg: string | undefined) {
  return child(
    `import { GpuRuntime } from "${MOD}";
const rt = await GpuRuntime.create();
console.log(JSON.stringify({ dir: Deno.env.get("XDG_RUNTIME_DIR") ?? null }));
rt[Symbol.dispose]();`,
    xdg,
  );
}

Deno.test({
  name: "GpuRuntime: no XDG_RUNTIME_DIR warning from Mesa when the variable is unset or invalid",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    for (const xdg of [undefined, "/nonexistent/runtime"]) {
      const child = await gpuChild(xdg);
      assert.equal(child.code, 0, child.stderr);
      assert.ok(!child.stderr.includes(WARNING), `stderr with ${xdg}: ${child.stderr}`);
      const { dir } = JSON.parse(child.stdout.trim().split("\n").at(-1)!);
      const info = await Deno.stat(dir);
      assert.ok(info.isDirectory);
      assert.equal(info.mode! & 0o077, 0, `${dir} is private`);
    }
  },
});

Deno.test({
  name: "GpuRuntime: a valid XDG_RUNTIME_DIR is left as it is",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const mine = await Deno.makeTempDir();
    try {
      await Deno.chmod(mine, 0o700);
      const child = await gpuChild(mine);
      assert.equal(child.code, 0, child.stderr);
      assert.deepEqual(JSON.parse(child.stdout.trim().split("\n").at(-1)!), { dir: mine });
    } finally {
      await Deno.remove(mine, { recursive: true });
    }
  },
});

Deno.test({
  name: "requestGpuAdapter: no XDG_RUNTIME_DIR warning when a bare adapter is asked for",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    // The memory plan reads an adapter's limits before any GpuRuntime exists (train/main.ts).
    const out = await child(`import { requestGpuAdapter } from "${MOD}";
const adapter = await requestGpuAdapter();
console.log(adapter === null ? "none" : "adapter");`);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout.trim(), "adapter");
    assert.ok(!out.stderr.includes(WARNING), out.stderr);
  },
});
