import assert from "node:assert/strict";
import { lifelineSpawnOptions } from "./stop_request.ts";

const PARENT = new URL("./testing/lifeline_parent.ts", import.meta.url).pathname;

/** Whether `pid` runs (a zombie, exited but not yet reaped, does not). */
function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function poll(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts the fixture parent; returns it and its child's pid once the child listens. */
async function start(file: string, plain: boolean) {
  const parent = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", PARENT, file, ...(plain ? ["--plain"] : [])],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = parent.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  const pid = Number(value?.trim());
  assert.ok(pid > 0, `child pid from "${value}"`);
  await poll("the child to listen", () => {
    try {
      return Deno.readTextFileSync(file) === "ready";
    } catch {
      return false;
    }
  });
  return { parent, pid };
}

Deno.test("a child spawned with a lifeline stops when its parent is SIGKILLed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { parent, pid } = await start(`${dir}/reason`, false);
    parent.kill("SIGKILL");
    await parent.status;
    await parent.stdout.cancel().catch(() => {});
    await poll("the orphaned child to stop", () => !alive(pid));
    assert.equal(await Deno.readTextFile(`${dir}/reason`), "parent exited");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("without a lifeline the orphan lives on (what the lifeline prevents)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { parent, pid } = await start(`${dir}/reason`, true);
    parent.kill("SIGKILL");
    await parent.status;
    await parent.stdout.cancel().catch(() => {});
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok(alive(pid), "the plain child should still run");
    Deno.kill(pid, "SIGTERM"); // SIGTERM still stops it, by the same path
    await poll("the child to stop on SIGTERM", () => !alive(pid));
    assert.equal(await Deno.readTextFile(`${dir}/reason`), "SIGTERM");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lifelineSpawnOptions pipes stdin and names the lifeline in the child's env", () => {
  assert.deepEqual(lifelineSpawnOptions({ A: "1" }), {
    stdin: "piped",
    env: { A: "1", PSYCHE_LIFELINE: "stdin" },
  });
});
