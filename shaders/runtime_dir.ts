/**
 * A private runtime directory for Mesa. Lavapipe and the other Mesa Vulkan drivers look up
 * `XDG_RUNTIME_DIR` while they enumerate adapters and, when it is unset (a container, a CI job,
 * an ssh session without a login manager), print `error: XDG_RUNTIME_DIR is invalid or not set
 * in the environment.` twice. The warning means nothing for compute, but it alarms whoever reads
 * the log, so every process sets one up before its first `requestAdapter`: a 0700 folder of its
 * own under the OS temp dir, only when the variable is unset or names no such private folder.
 *
 * @module
 */

/** Whether `path` is a directory owned by this user that no one else may enter. */
function isPrivateDir(path: string, uid: number | null): boolean {
  try {
    const info = Deno.lstatSync(path);
    if (!info.isDirectory) return false;
    if (uid !== null && info.uid !== null && info.uid !== uid) return false;
    return info.mode === null || (info.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

function currentUid(): number | null {
  try {
    return Deno.uid();
  } catch {
    return null;
  }
}

/**
 * Points `XDG_RUNTIME_DIR` at a private folder when it does not already name one (Linux only;
 * a no-op elsewhere and whenever the environment cannot be written). Returns the folder in
 * use, or null when it left the environment alone. Never throws: a missing runtime dir costs a
 * warning, not the GPU.
 */
export function ensureRuntimeDir(): string | null {
  if (Deno.build.os !== "linux") return null;
  try {
    const uid = currentUid();
    const current = Deno.env.get("XDG_RUNTIME_DIR");
    if (current !== undefined && current !== "" && isPrivateDir(current, uid)) return current;
    const tmp = Deno.env.get("TMPDIR") || "/tmp";
    // One folder per user, reused by every process; if someone else planted that name, a fresh
    // unique one instead.
    let dir = `${tmp}/psyche-runtime-${uid ?? "user"}`;
    try {
      Deno.mkdirSync(dir, { mode: 0o700 });
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
    if (!isPrivateDir(dir, uid)) dir = Deno.makeTempDirSync({ prefix: "psyche-runtime-" });
    Deno.chmodSync(dir, 0o700);
    Deno.env.set("XDG_RUNTIME_DIR", dir);
    return dir;
  } catch {
    return null;
  }
}

/**
 * `navigator.gpu.requestAdapter` with the runtime folder set up first: every adapter request in
 * the project goes through here (GpuRuntime, the memory plan's limits, benchmarks), so none
 * makes Mesa print its XDG warning. Null without WebGPU or without an adapter.
 */
export async function requestGpuAdapter(
  options?: GPURequestAdapterOptions,
): Promise<GPUAdapter | null> {
  if (typeof navigator === "undefined" || !("gpu" in navigator)) return null;
  ensureRuntimeDir();
  return await navigator.gpu.requestAdapter(options);
}
