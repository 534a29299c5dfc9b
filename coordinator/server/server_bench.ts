/**
 * Coordinator TCP costs: encoding and decoding a witness frame at the default client cap,
 * a state frame of a full 256-client epoch, one request's round trip over loopback
 * (backend call → server → host → Error answer), and what a flood of telemetry notices costs
 * the host per frame against a rejected request (group `host`).
 *
 *     deno bench -A coordinator/server/server_bench.ts
 */
import { encodeCoordinatorState } from "../encoding/mod.ts";
import { testState } from "../../tests/support/coordinator_fixtures.ts";
import { identities, identity } from "../../tests/support/coordinator_fixtures.ts";
import { CoordinatorHost } from "./host.ts";
import { decodeClientMessage, encodeClientMessage, encodeServerMessage } from "./protocol.ts";
import { connectTestBackend, startTestServer } from "../../tests/support/server_driver.ts";
import { createBloom, NO_DIGEST, type Witness, witnessBloomParameters } from "../core/mod.ts";

const { numBits, numKeys } = witnessBloomParameters(256);
const bloom = () => createBloom(numBits, new BigUint64Array(numKeys).fill(7n));
const witness: Witness = {
  proof: { position: 3, index: 5, witness: true },
  participantBloom: bloom(),
  broadcastBloom: bloom(),
  broadcastMerkle: new Uint8Array(32),
};
const metadata = {
  step: 10,
  tokensPerSec: 1000,
  bandwidthPerSec: 1e6,
  loss: 3,
  evals: [],
  promptResults: [],
  promptIndex: 0,
  efficiency: 1,
};
const witnessFrame = encodeClientMessage({
  kind: "Witness",
  requestId: 1,
  witness,
  metadata,
  paramsDigest: NO_DIGEST,
});

Deno.bench("encode Witness frame (256-client blooms)", { group: "codec" }, () => {
  encodeClientMessage({
    kind: "Witness",
    requestId: 1,
    witness,
    metadata,
    paramsDigest: NO_DIGEST,
  });
});

Deno.bench("decode Witness frame (256-client blooms)", { group: "codec" }, () => {
  decodeClientMessage(witnessFrame);
});

const full = testState({ maxClients: 256, initMinClients: 256, minClients: 1 }, 0);
full.epochState.clients = identities(256).map((id, i) => ({
  id,
  state: "Healthy",
  exitedHeight: 0,
  epochIndex: i,
}));

Deno.bench("State frame of a 256-client epoch (encode state + frame)", { group: "codec" }, () => {
  encodeServerMessage({ kind: "State", bytes: encodeCoordinatorState(full) });
});

// A member that already reported this step: every further notice for it is a flood frame.
const host = new CoordinatorHost({ state: testState({}, 0), withdrawOnDisconnect: true });
const member = identity(0).signer;
host.handle(member, { kind: "Join", requestId: 1, runId: host.state.runId }, 1, 1n);
const notice = encodeClientMessage({
  kind: "Telemetry",
  requestId: 0,
  telemetry: {
    step: host.state.progress.step,
    bytesSent: 1e9,
    bytesReceived: 2e9,
    tokensPerSec: 5000,
    breakdownMs: { train: 900, encode: 20, exchange: 300, apply: 40, wait: 5 },
  },
});
host.handle(member, decodeClientMessage(notice), 1, 1n);
host.takeEvents();
const withdraw = encodeClientMessage({ kind: "Withdraw", requestId: 2 });

Deno.bench("baseline: decode + host handles a Withdraw it rejects", {
  group: "host",
  baseline: true,
}, () => {
  host.handle(member, decodeClientMessage(withdraw), 1, 1n);
  host.takeEvents();
});

Deno.bench("decode + host handles a repeated telemetry notice (a flood)", { group: "host" }, () => {
  host.handle(member, decodeClientMessage(notice), 1, 1n);
  host.takeEvents();
});

// Unthrottled: this measures the round trip itself, back to back.
const server = startTestServer({ tickIntervalMs: 60_000, rateLimits: null });
const backend = await connectTestBackend(server);
const repo = { kind: "Hub" as const, repo: { repoId: "org/m", revision: null } };

Deno.bench("request round trip over loopback (answered Error)", { group: "tcp" }, async () => {
  await backend.sendCheckpoint(repo).catch(() => {});
});

globalThis.addEventListener("unload", () => {
  backend.close();
  server.close();
});
