/**
 * Three real {@link Exchange}s (libp2p nodes on 127.0.0.1, gossip, payload services) in round 0
 * of one epoch, for attacks on the P2P exchange: client 0 is honest, client 1 observes (its
 * `refused` events are kept), client 2 is the attacker. Shared by tests/attack_p2p_test.ts and
 * tests/attack_p2p_bench.ts.
 *
 * @module
 */
import { waitFor } from "../../client/testing/p2p.ts";
import { RunDriver, testState } from "./coordinator_fixtures.ts";
import type { BatchId } from "../../common/mod.ts";
import type { CommitteeProof, NodeIdentity } from "../../coordinator/core/mod.ts";
import {
  type ClientEvents,
  type ClientLogger,
  Exchange,
  type ExchangeFaults,
  roundView,
} from "../../client/mod.ts";
import type { DistroResult, PayloadExpectation } from "../../optimizer/mod.ts";
import { publicKeyOf } from "../../net/p2p/mod.ts";

/** A running three-client exchange in round 0. */
export interface P2PRun extends AsyncDisposable {
  readonly honest: Exchange;
  readonly observer: Exchange;
  readonly attacker: Exchange;
  readonly ids: readonly NodeIdentity[];
  /** The round's step. */
  readonly step: number;
  /** Client `i`'s batch and committee proof this round. */
  batchOf(i: number): BatchId;
  proofOf(i: number): CommitteeProof;
  /** The observer's `refused` events, in order. */
  readonly refusals: ClientEvents["refused"][];
  /** Every event the observer logged, in order. */
  readonly observed: { event: string; fields: unknown }[];
}

/** Starts three exchanges for `expectation`'s model and waits for their gossip mesh. */
export async function startP2PRun(
  expectation: PayloadExpectation,
  options: { runId?: string; observerFaults?: ExchangeFaults } = {},
): Promise<P2PRun> {
  const secrets = [1, 2, 3].map((n) => new Uint8Array(32).fill(n * 29));
  const ids: NodeIdentity[] = secrets.map((s) => {
    const key = publicKeyOf(s);
    return { signer: key, p2pIdentity: key };
  });
  const driver = new RunDriver(
    testState({ initMinClients: 3, minClients: 1, globalBatchSizeStart: 6, globalBatchSizeEnd: 6 }),
  );
  driver.startEpoch(ids);
  driver.warmupTimeout();
  const state = driver.state;
  const refusals: ClientEvents["refused"][] = [];
  const observed: { event: string; fields: unknown }[] = [];
  const exchanges: Exchange[] = [];
  const close = async () => {
    for (const ex of exchanges) await ex.close();
  };
  try {
    for (const [i, secretKey] of secrets.entries()) {
      const logger: ClientLogger = {
        log: (event, fields) => {
          if (i === 1) observed.push({ event, fields });
          if (i === 1 && event === "refused") refusals.push(fields as ClientEvents["refused"]);
        },
      };
      const exchange = await Exchange.start({
        runId: options.runId ?? "attack-p2p",
        secretKey,
        publicKey: ids[i].p2pIdentity,
        logger,
        onChange: () => {},
        gossipHeartbeatMs: 100,
        retry: { attemptTimeoutMs: 5000, retries: 0, backoffMs: 10, maxBackoffMs: 10 },
        faults: i === 1 ? options.observerFaults : undefined,
      });
      exchange.results.setExpectation(expectation);
      exchanges.push(exchange);
    }
    for (const ex of exchanges) {
      for (const [j, other] of exchanges.entries()) {
        if (other !== ex) {
          await ex.node.addPeerAddresses(ids[j].p2pIdentity, other.node.addresses());
        }
      }
      await ex.update(structuredClone(state)); // each client holds its own copy, as in life
    }
    await waitFor(
      "gossip mesh",
      () => exchanges.every((ex) => ex.gossip.topicPeers().length === 2),
      10_000,
    );
    await new Promise((r) => setTimeout(r, 300)); // a heartbeat or two to graft the mesh
  } catch (e) {
    await close();
    throw e;
  }
  const view = roundView(state, 0, ids[0].signer)!;
  const [honest, observer, attacker] = exchanges;
  return {
    honest,
    observer,
    attacker,
    ids,
    step: view.step,
    batchOf: (i) => view.assignments.find((a) => a.clientIndex === i)!.batch,
    proofOf: (i) => view.selection.committeeProof(i),
    refusals,
    observed,
    [Symbol.asyncDispose]: close,
  };
}

/** A valid result for `expectation`'s model (k distinct indices per chunk, 1-bit or bf16). */
export function validResult(
  expectation: PayloadExpectation,
  step: number,
  batch: BatchId,
): DistroResult {
  return {
    step,
    batch,
    trainerNonce: 0,
    params: expectation.layouts.map(({ chunks, k }) => ({
      indices: Uint32Array.from({ length: chunks * k }, (_, i) => i % k),
      values: Float32Array.from({ length: chunks * k }, (_, i) => (i % 2 ? -1 : 1)),
    })),
  };
}
