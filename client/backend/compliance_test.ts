import { testState } from "../../tests/support/coordinator_fixtures.ts";
import { generateIdentity } from "../../net/mod.ts";
import { describeBackendCompliance } from "../testing/backend_compliance.ts";
import { MemoryCoordinator } from "./memory.ts";
import { TcpBackend } from "./tcp.ts";
import { CoordinatorHost, startCoordinatorServer } from "../../coordinator/server/mod.ts";

function newHost(): CoordinatorHost {
  return new CoordinatorHost({
    state: testState({ initMinClients: 2, minClients: 2 }, 0),
    withdrawOnDisconnect: true,
  });
}

describeBackendCompliance("memory", () => {
  const coordinator = new MemoryCoordinator({ host: newHost() });
  return Promise.resolve({
    host: coordinator.host,
    connect: (runId) => Promise.resolve(coordinator.connect(generateIdentity().publicKey, runId)),
    close: () => Promise.resolve(),
  });
});

describeBackendCompliance("tcp", () => {
  const server = startCoordinatorServer({
    host: newHost(),
    hostname: "127.0.0.1",
    tickIntervalMs: 50,
  });
  return Promise.resolve({
    host: server.host,
    connect: (runId) =>
      TcpBackend.connect({ address: server.address, runId, identity: generateIdentity() }),
    close: () => server.close(),
  });
});
