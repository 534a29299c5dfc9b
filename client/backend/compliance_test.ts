import { testState } from "../../tests/support/coordinator_fixtures.ts";
import { generateIdentity } from "../../net/mod.ts";
import {
  type ComplianceOptions,
  describeBackendCompliance,
} from "../testing/backend_compliance.ts";
import { MemoryCoordinator } from "./memory.ts";
import { TcpBackend } from "./tcp.ts";
import { CoordinatorHost, startCoordinatorServer } from "../../coordinator/server/mod.ts";

/** Where a verifying run's clock starts (seconds). */
const START = 1000;

function newHost(options: ComplianceOptions): CoordinatorHost {
  const state = options.verifying
    ? testState({ initMinClients: 3, minClients: 2, verificationPercent: 100 }, START)
    : testState({ initMinClients: 2, minClients: 2 }, 0);
  return new CoordinatorHost({ state, withdrawOnDisconnect: true });
}

describeBackendCompliance("memory", (options) => {
  let now = START;
  const coordinator = new MemoryCoordinator({
    host: newHost(options),
    clock: options.verifying ? () => now : undefined,
  });
  return Promise.resolve({
    host: coordinator.host,
    connect: (runId) => Promise.resolve(coordinator.connect(generateIdentity().publicKey, runId)),
    advance: (seconds) => {
      now += seconds;
      coordinator.tick();
    },
    close: () => Promise.resolve(),
  });
});

describeBackendCompliance("tcp", (options) => {
  let nowMs = START * 1000;
  const server = startCoordinatorServer({
    host: newHost(options),
    hostname: "127.0.0.1",
    tickIntervalMs: 50,
    clock: options.verifying ? () => nowMs : undefined,
  });
  return Promise.resolve({
    host: server.host,
    connect: (runId) =>
      TcpBackend.connect({ address: server.address, runId, identity: generateIdentity() }),
    advance: (seconds) => nowMs += seconds * 1000,
    close: () => server.close(),
  });
});
