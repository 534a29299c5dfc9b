import assert from "node:assert/strict";
import { describeDialFailure } from "./dial_failure.ts";

Deno.test("a failed dial names the addresses it tried and why each failed, in words", () => {
  const abort = new DOMException("The operation was aborted", "AbortError");
  assert.equal(
    describeDialFailure(["/ip4/10.78.0.2/tcp/4001"], abort),
    "dialled /ip4/10.78.0.2/tcp/4001: no answer before the dial gave up (a peer behind NAT or " +
      "a firewall looks like this)",
  );
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:4001"), {
    code: "ECONNREFUSED",
  });
  const both = new AggregateError([refused, abort, abort], "All multiaddr dials failed");
  assert.equal(
    describeDialFailure(["/ip4/127.0.0.1/tcp/4001", "/ip4/10.0.0.3/tcp/4001"], both),
    "dialled /ip4/127.0.0.1/tcp/4001, /ip4/10.0.0.3/tcp/4001: refused: nothing listens there; " +
      "no answer before the dial gave up (a peer behind NAT or a firewall looks like this)",
  );
  assert.equal(
    describeDialFailure([], new Error("The dial request has no valid addresses")),
    "no known address: no address to dial",
  );
  // What it cannot name, it passes on as it came.
  assert.equal(
    describeDialFailure(["/ip4/1.2.3.4/tcp/1"], new Error("odd")),
    "dialled /ip4/1.2.3.4/tcp/1: odd",
  );
});
