/**
 * The behaviour every {@linkcode CoordinatorBackend} must show, as one suite each backend
 * runs (`describeBackendCompliance("tcp", ...)`): states arrive newest-first, joins are
 * registered in order, the coordinator's rejections come back as CoordinatorError with
 * its code, a refusal is final, `close` ends iterators and fails later calls, an aborted
 * signal rejects the call, a seated verifier's report is taken and a stranger's refused. A new
 * backend (Solana) passes the same suite.
 *
 * @module
 */
import assert from "node:assert/strict";
import { BackendError, type CoordinatorBackend } from "../backend/backend.ts";
import {
  CoordinatorError,
  type CoordinatorState,
  currentRound,
  NO_DIGEST,
  roundSelection,
  stageSeats,
  type VerificationReport,
  type Witness,
  witnessBloomParameters,
  type WitnessMetadata,
} from "../../coordinator/core/mod.ts";
import type { CoordinatorHost } from "../../coordinator/server/mod.ts";
import { toHex } from "../../common/mod.ts";

/** The run the suite's host must hold: id `RUN_ID`, 2 clients to start, WaitingForMembers. */
export const COMPLIANCE_RUN_ID = "test-run";

/** What a test asks of the environment it is given. */
export interface ComplianceOptions {
  /**
   * A run that verifies every round's results (`verificationPercent` 100), starts with three
   * clients (`initMinClients` 3) and runs on a clock the test moves with
   * {@linkcode ComplianceEnv.advance}, starting at the instant the run began waiting.
   */
  verifying?: boolean;
}

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
  /**
   * With `verifying`: moves the clock of the coordinator (and of the backends, where they tick
   * the run themselves) forward by `seconds`; the run ticks at the new time soon after.
   */
  advance?(seconds: number): void;
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

function emptyWarmupWitness(state: CoordinatorState, index = 0): Witness {
  const { numBits, numKeys } = witnessBloomParameters(state.config.maxClients);
  const bloom = () => ({ keys: new BigUint64Array(numKeys), bits: new Uint8Array(numBits / 8) });
  return {
    proof: { position: index, index, witness: false },
    participantBloom: bloom(),
    broadcastBloom: bloom(),
    broadcastMerkle: new Uint8Array(32),
  };
}

const METADATA: WitnessMetadata = {
  step: 1,
  tokensPerSec: 0,
  bandwidthPerSec: 0,
  loss: 0,
  evals: [],
  promptResults: [],
  promptIndex: 0,
  efficiency: 1,
};

/** The position of `backend`'s client in the epoch's list of `state` (-1 when absent). */
function indexIn(state: CoordinatorState, backend: CoordinatorBackend): number {
  const me = toHex(backend.identity.signer);
  return state.epochState.clients.findIndex((c) => toHex(c.id.signer) === me);
}

/**
 * Registers the compliance tests for one backend; `makeEnv` builds a fresh one per test, for the
 * options that test asks.
 */
export function describeBackendCompliance(
  name: string,
  makeEnv: (options: ComplianceOptions) => Promise<ComplianceEnv>,
): void {
  const test = (
    title: string,
    fn: (env: ComplianceEnv) => Promise<void>,
    options: ComplianceOptions = {},
  ) =>
    Deno.test(`${name} backend: ${title}`, async () => {
      const env = await makeEnv(options);
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

  test("a seated verifier's report is taken; a stranger's is InvalidVerification", async (env) => {
    const advance = env.advance;
    assert.ok(advance !== undefined, "a verifying environment moves its clock");
    const members = [
      await env.connect(COMPLIANCE_RUN_ID),
      await env.connect(COMPLIANCE_RUN_ID),
      await env.connect(COMPLIANCE_RUN_ID),
    ];
    const stranger = await env.connect(COMPLIANCE_RUN_ID);
    try {
      for (const m of members) await m.join();
      advance(1); // the three start the epoch
      let s = await first(members[0], (s) => s.runState === "Warmup");
      for (const m of members) {
        await m.sendWarmupWitness(emptyWarmupWitness(s, indexIn(s, m)), NO_DIGEST);
      }
      s = await first(members[0], (s) => s.runState === "RoundTrain");
      const selection = roundSelection(s.config, currentRound(s));
      for (const m of members) {
        const proof = selection.witnessProof(indexIn(s, m));
        if (!proof.witness) continue;
        await m.sendWitness({ ...emptyWarmupWitness(s), proof }, METADATA, NO_DIGEST);
      }
      s = await first(members[0], (s) => s.runState === "RoundWitness");
      advance(s.config.roundWitnessTime); // round 1 starts and samples round 0's results
      s = await first(members[0], (s) => s.epochState.verificationTasks.length > 0);
      const task = s.epochState.verificationTasks[0];
      const seat = stageSeats(task)[0];
      // Nobody left yet: an epoch index is the client's position in the list.
      const verifier = members.find((m) => indexIn(s, m) === seat.verifier)!;
      const trainer = members.find((m) => indexIn(s, m) === task.trainer)!;
      const report: VerificationReport = {
        height: task.height,
        trainer: task.trainer,
        verdict: "Pass",
        evidence: "None",
        detail: 0,
      };
      const invalid = (e: unknown) =>
        e instanceof CoordinatorError && e.code === "InvalidVerification";
      await assert.rejects(stranger.sendVerificationReport(report), invalid);
      await assert.rejects(trainer.sendVerificationReport(report), invalid);
      await verifier.sendVerificationReport(report);
      await first(
        verifier,
        (s) =>
          s.epochState.verificationTasks.some((t) =>
            t.height === task.height && t.trainer === task.trainer &&
            t.seats.some((x) => x.verifier === seat.verifier && x.verdict === "Pass")
          ),
      );
      // Already reported. (Another detail, so that it is not the same transaction on Solana.)
      await assert.rejects(verifier.sendVerificationReport({ ...report, detail: 1 }), invalid);
    } finally {
      for (const b of [...members, stranger]) await b.close();
    }
  }, { verifying: true });

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
