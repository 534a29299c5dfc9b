import assert from "node:assert/strict";
import { parseLocalnetArgs } from "./main.ts";

Deno.test("localnet flags: defaults of a validator, ports checked", () => {
  assert.deepEqual(parseLocalnetArgs([]), { hostname: "127.0.0.1", port: 8899, wsPort: 8900 });
  assert.deepEqual(parseLocalnetArgs(["--port", "0", "--ws-port", "9"]), {
    hostname: "127.0.0.1",
    port: 0,
    wsPort: 9,
  });
  assert.equal(parseLocalnetArgs(["-h"]), "help");
  assert.throws(() => parseLocalnetArgs(["--port", "70000"]), /--port must be a port number/);
  assert.throws(() => parseLocalnetArgs(["--ws-port", "x"]), /--ws-port .* found "x"/);
  assert.throws(() => parseLocalnetArgs(["--nope"]), /nope/);
});
