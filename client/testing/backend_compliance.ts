/**
 * The behaviour every {@linkcode CoordinatorBackend} must show, as one suite each backend
 * runs (`describeBackendCompliance("tcp", ...)`): states arrive newest-first, joins are
 * registered in order, the coordinator's rejections come back as CoordinatorError with
 * its code, a refusal is final, `close` ends iterators and fails later calls, an aborted
 * signal rejects the call. A new backend (Solana) passes the same suite.
 *
 * @module
 */
import assert from "node:assert/strict";
import { BackendError, type CoordinatorBackend } from "../backend/backend.ts";
import {
  CoordinatorError,
  type CoordinatorState,
  NO_DIGEST,
  type Witness,
  witnessBloomParameters,
} from "../../coordinator/core/mod.ts";
import type { CoordinatorHost } from "../../coordinator/server/mod.ts";
import { toHex } from "../../common/mod.ts";

/** The run the suite's host must hold: id `RUN_ID`, 2 clients to start, WaitingForMembers. */
export const COMPLIANCE_RUN_ID = "test-run";

/** What a backend under test provides. */
export interface ComplianceEnv {
  /**
   * The coordinator's pending list (its run: {@linkcode COMPLIANCE_RUN_ID}, `initMinClients`
   * 2): the TCP server's host, or a reader of the Solana account's registry.
   */
  host: Pick<CoordinatorHost, "pending">;
  /**
   * Whether closing a backend takes its client out of the pending list, and `withdraw()` asks
   * the coordinator (default true). False for Solana: the program has no withdraw instruction
   * (as in Psyche), so a closed client stays registered until health checks remove it.
   */
  leavesOnClose?: boolean;
  /** A backend for a fresh identity, following run `runId`. */
  connect(runId: string): Promise<CoordinatorBackend>;
  /** Stops whatever the environment started. */
  close(): Promise<void>;
}

/** Polls `check` until it holds (for effects a backend delivers asynchronously). */
async function eventually(check: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function first(
  backend: CoordinatorBackend,
  predicate: (s: CoordinatorState) => boolean,
): Promise<CoordinatorState> {
  for await (const s of backend.states({ signal: AbortSignal.timeout(3000) })) {
    if (predicate(s)) return s;
  }
  throw new Error(`no matching state; last ${backend.latest()?.runState}`);
}

function emptyWarmupWitness(state: CoordinatorState): Witness {
  const { numBits, numKeys } = witnessBloomParameters(state.config.maxClients);
  const bloom = () => ({ keys: new BigUint64Array(numKeys), bits: new Uint8Array(numBits / 8) });
  return {
    proof: { position: 0, index: 0, witness: false },
    participantBloom: bloom(),
    broadcastBloom: bloom(),
    broadcastMerkle: new Uint8Array(32),
  };
}

/** Registers the compliance tests for one backend; `makeEnv` builds a fresh one per test. */
export function describeBackendCompliance(
  name: string,
  makeEnv: () => Promise<ComplianceEnv>,
): void {
  const test = (title: string, fn: (env: ComplianceEnv) => Promise<void>) =>
    Deno.test(`${name} backend: ${title}`, async () => {
      const env = await makeEnv();
      try {
        await fn(env);
      } finally {
        await env.close();
      }
    });

  test("the newest state comes first", async (env) => {
    const backend = await env.connect(COMPLIANCE_RUN_ID);
    try {
      const s = await first(backend, () => true);
      assert.equal(s.runId, COMPLIANCE_RUN_ID);
      assert.equal(s.runState, "WaitingForMembers");
      assert.equal(backend.latest()?.runId, COMPLIANCE_RUN_ID);
    } finally {
      await backend.close();
    }
  });

  test("joins are registered once each, in order, and start the epoch", async (env) => {
    const a = await env.connect(COMPLIANCE_RUN_ID);
    const b = await env.connect(COMPLIANCE_RUN_ID);
    try {
      await a.join();
      await a.join();
      assert.deepEqual(env.host.pending().map((p) => toHex(p.signer)), [
        toHex(a.identity.signer),
      ]);
      await b.join();
      for (const backend of [a, b]) {
        const s = await first(backend, (s) => s.runState === "Warmup");
        assert.deepEqual(
          s.epochState.clients.map((c) => toHex(c.id.signer)),
          [toHex(a.identity.signer), toHex(b.identity.signer)],
        );
      }
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("a rejected call is a CoordinatorError with the coordinator's code", async (env) => {
    const backend = await env.connect(COMPLIANCE_RUN_ID);
    try {
      const s = await first(backend, () => true);
      await assert.rejects(
        backend.sendWarmupWitness(emptyWarmupWitness(s), NO_DIGEST),
        (e) => e instanceof CoordinatorError && e.code === "WrongRunState",
      );
      await assert.rejects(
        backend.sendCooldownWitness(
          { position: 0, index: 0, witness: true },
          new Uint8Array(32).fill(1),
        ),
        (e) => e instanceof CoordinatorError && e.code === "WrongRunState",
      );
      await assert.rejects(
        backend.sendCheckpoint({ kind: "Hub", repo: { repoId: "org/m", revision: null } }),
        (e) => e instanceof CoordinatorError && e.code === "InvalidCheckpoint",
      );
      if (env.leavesOnClose ?? true) {
        // A backend that can withdraw refuses it outside an epoch, with the coordinator's code.
        await assert.rejects(
          backend.withdraw(),
          (e) => e instanceof CoordinatorError && e.code === "InvalidWithdraw",
        );
      } else {
        await backend.withdraw(); // no such instruction: the health checks remove the client
      }
      await backend.join(); // still usable
    } finally {
      await backend.close();
    }
  });

  test("a wrong run id is refused naming both ids, for good", async (env) => {
    const backend = await env.connect("another-run");
    try {
      await assert.rejects(
        backend.join(),
        (e) =>
          e instanceof BackendError && e.kind === "Refused" &&
          e.message.includes(`"another-run"`) && e.message.includes(`"${COMPLIANCE_RUN_ID}"`),
      );
      await assert.rejects(
        backend.join(),
        (e) => e instanceof BackendError && e.kind === "Refused",
      );
      await assert.rejects(async () => {
        for await (const _ of backend.states()) {
          // a state may come before the refusal; then the iterator throws
        }
      }, /Refused/);
      assert.equal(env.host.pending().length, 0);
    } finally {
      await backend.close();
    }
  });

  test("close ends iterators, fails later calls and leaves the run", async (env) => {
    const backend = await env.connect(COMPLIANCE_RUN_ID);
    await backend.join();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const s of backend.states()) seen.push(s.runState);
    })();
    await backend.close();
    await reading;
    await backend.close(); // idempotent
    await assert.rejects(backend.join(), (e) => e instanceof BackendError && e.kind === "Closed");
    if (env.leavesOnClose === false) {
      assert.equal(env.host.pending().length, 1, "the registration outlives the backend");
      return;
    }
    await eventually(() => env.host.pending().length === 0, "the coordinator to see the leave");
  });

  test("an aborted signal rejects the call with its reason", async (env) => {
    const backend = await env.connect(COMPLIANCE_RUN_ID);
    try {
      const controller = new AbortController();
      controller.abort(new Error("stop now"));
      await assert.rejects(backend.join({ signal: controller.signal }), /stop now/);
      let count = 0;
      for await (const _ of backend.states({ signal: controller.signal })) count++;
      assert.equal(count, 0, "an aborted iterator yields nothing");
    } finally {
      await backend.close();
    }
  });
}
