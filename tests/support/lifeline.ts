/**
 * The test side of a lifeline (cli/stop_request.ts): a child spawned with
 * `lifelineSpawnOptions()` stops if the test process dies; once the child has exited, its
 * stdin is closed so no open pipe outlives it.
 *
 * @module
 */

/** Closes `child`'s stdin once it has exited. */
export function releaseLifeline(child: Deno.ChildProcess): void {
  child.status.then(() => child.stdin.close()).catch(() => {});
}
