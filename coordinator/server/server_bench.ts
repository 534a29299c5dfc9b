/**
 * Coordinator TCP costs: encoding and decoding a witness frame at the default client cap,
 * a state frame of a full 256-client epoch, and one request's round trip over loopback
 * (backend call → server → host → Error answer).
 *
 *     deno bench -A coordinator/server/server_bench.ts
 */
import { encodeCoordinatorState } from "../encoding/mod.ts";
import { testState } from "../../tests/support/coordinator_fixtures.ts";
import { identities } from "../../tests/support/coordinator_fixtures.ts";
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
