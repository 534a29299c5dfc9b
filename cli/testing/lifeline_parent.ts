/**
 * Test fixture: spawns lifeline_child.ts with {@link lifelineSpawnOptions} (or, with `--plain`,
 * without), prints the child's pid, and waits to be killed.
 *
 * @module
 */
import { lifelineSpawnOptions } from "../stop_request.ts";

const [file, mode] = Deno.args;
const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", new URL("./lifeline_child.ts", import.meta.url).pathname, file],
  ...(mode === "--plain" ? { stdin: "null" as const } : lifelineSpawnOptions()),
  stdout: "null",
  stderr: "inherit",
}).spawn();
console.log(child.pid);
await child.status;
