/**
 * Test fixture: waits for {@link onStopRequest}, then writes the reason to the file named by its
 * first argument and exits. Writes "ready" there first, once it listens.
 *
 * @module
 */
import { onStopRequest } from "../stop_request.ts";

const [file] = Deno.args;
onStopRequest((reason) => {
  Deno.writeTextFileSync(file, reason);
  Deno.exit(0);
});
Deno.writeTextFileSync(file, "ready");
setInterval(() => {}, 1000); // stays alive until asked to stop
