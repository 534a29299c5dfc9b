/**
 * Compute units of the coordinator program's instructions at a given number of clients,
 * measured on the real program in litesvm: join, the WaitingForMembers -> Warmup tick,
 * warmup witness, witness (the most expensive of a round's witnesses), the round tick,
 * a one-entry health check and the entries one health-check transaction can carry.
 * Also the witness transaction's size against the 1,232-byte limit.
 *
 * `deno run -A coordinator/solana/testing/compute_units.ts` prints the table for 16 and 256
 * clients; compute_units_test.ts holds the figures under Solana's limits.
 *
 * @module
 */

import { type Address, getAddressDecoder, type KeyPairSigner } from "@solana/kit";
import {
  addressBytes,
  CoordinatorSvm,
  MAX_COMPUTE_UNITS,
  MAX_TRANSACTION_BYTES,
  type SendResult,
} from "./svm.ts";
import {
  bloomAdd,
  type CoordinatorConfig,
  createBloom,
  currentRound,
  type LlmModel,
  previousRound,
  roundClients,
  roundSelection,
  sha256,
  type Witness,
  witnessBloomParameters,
} from "../../core/mod.ts";
import { ACCOUNT_SIZE, type CoordinatorAccount, type CoordinatorInstruction } from "../abi/mod.ts";

/** The parameter digest reports carry. */
const DIGEST = new Uint8Array(32).fill(0xd1);

/** Compute units (and sizes) measured for one client count. */
export interface ComputeUnitReport {
  /** The measured run's coordinator account (left in RoundTrain at height 3). */
  coordinator: Address;
  clients: number;
  join: number;
  tickStartEpoch: number;
  warmupWitness: number;
  witnessMax: number;
  tickNextRound: number;
  healthCheckOne: number;
  /** Most health-check entries one transaction carries (compute units or size, 1.4M budget). */
  healthChecksPerTransaction: number;
  /** Compute units of that fullest health-check transaction. */
  healthCheckFull: number;
  witnessTransactionBytes: number;
  accountBytes: number;
}

const CONFIG: Omit<CoordinatorConfig, "maxClients" | "initMinClients" | "minClients"> = {
  warmupTime: 50,
  cooldownTime: 5,
  maxRoundTrainTime: 50,
  roundWitnessTime: 5,
  globalBatchSizeWarmupTokens: 0,
  epochTime: 10_000,
  totalSteps: 1000,
  witnessNodes: 0,
  globalBatchSizeStart: 512,
  globalBatchSizeEnd: 512,
  verificationPercent: 0,
  waitingForMembersExtraTime: 1,
  verificationBarEpochs: 4,
};

const MODEL: LlmModel = {
  architecture: "HfLlama",
  dataType: "Pretraining",
  maxSeqLen: 2048,
  coldStartWarmupSteps: 0,
  snapshotDtype: "f32",
  dataLocation: { kind: "Dummy" },
  checkpoint: { kind: "Hub", repo: { repoId: "org/model", revision: null } },
  lrSchedule: { kind: "Constant", baseLr: 3e-4, warmupSteps: 0, warmupInitLr: 0 },
  optimizer: {
    kind: "Distro",
    clipGradNorm: 1,
    weightDecay: null,
    compressionDecay: 0.999,
    compressionTopk: 64,
    compressionChunk: 64,
    quantize1bit: true,
  },
};

function must(r: SendResult, what: string): SendResult {
  if (!r.ok) throw new Error(`${what} failed: ${r.error}\n${r.logs.join("\n")}`);
  return r;
}

function report(
  account: CoordinatorAccount,
  index: number,
  seen: Uint8Array[],
  warmup: boolean,
): Witness {
  const state = account.state;
  const { numBits, numKeys } = witnessBloomParameters(state.config.maxClients);
  // Keys differ per witness, as real clients' random keys do: with one key set for all, a
  // false positive for the client never seen would be in every bloom and make it "healthy".
  const keys = new BigUint64Array(numKeys).map((_, k) =>
    BigInt(k + 1 + 97 * index) * 0x9e3779b97f4a7c15n
  );
  const participantBloom = createBloom(numBits, keys);
  for (const s of seen) bloomAdd(participantBloom, sha256(s));
  const proof = warmup
    ? { position: index, index, witness: false }
    : roundSelection(state.config, currentRound(state)).witnessProof(index);
  return {
    proof,
    participantBloom,
    broadcastBloom: createBloom(numBits, keys),
    broadcastMerkle: new Uint8Array(32).fill(1),
  };
}

/** Runs one epoch's worth of instructions with `n` clients and records their costs. */
export async function measureComputeUnits(
  n: number,
  svm?: CoordinatorSvm,
): Promise<ComputeUnitReport> {
  const csvm = svm ?? await CoordinatorSvm.create();
  const main = await csvm.newSigner();
  const { coordinator, result } = await csvm.createRun({
    runId: `cu-${n}`,
    mainAuthority: main,
    joinAuthority: main.address,
    permissionless: true,
  });
  must(result, "init");
  const send = (ix: CoordinatorInstruction, s: KeyPairSigner | null) =>
    csvm.send(coordinator, ix, { signer: s, computeUnitLimit: MAX_COMPUTE_UNITS });
  const maxClients = Math.max(n, 16);
  must(
    await send({
      kind: "Update",
      config: { ...CONFIG, maxClients, initMinClients: n, minClients: Math.max(1, n >> 1) },
      model: MODEL,
    }, main),
    "update",
  );
  let now = 100;
  csvm.setClock(now, 1n);
  must(await send({ kind: "SetPaused", paused: false }, main), "resume");
  const clients: KeyPairSigner[] = [];
  let join = 0;
  for (let i = 0; i < n; i++) {
    const c = await csvm.newSigner();
    clients.push(c);
    join = Math.max(
      join,
      must(await send({ kind: "JoinRun", p2pIdentity: addressBytes(c.address) }, c), "join")
        .computeUnits,
    );
  }
  csvm.setClock(now += 2, 2n);
  const tickStartEpoch = must(await send({ kind: "Tick" }, null), "tick WFM").computeUnits;
  const bySigner = new Map(clients.map((c) => [c.address as string, c]));
  const signerOf = (acc: CoordinatorAccount, i: number): KeyPairSigner =>
    bySigner.get(encodeAddress(acc.state.epochState.clients[i].id.signer))!;
  let warmupWitness = 0;
  let acc = csvm.coordinatorAccount(coordinator);
  for (let i = 0; acc.state.runState === "Warmup"; i++) {
    const r = must(
      await send(
        { kind: "WarmupWitness", witness: report(acc, i, [], true), paramsDigest: DIGEST },
        signerOf(acc, i),
      ),
      "warmup witness",
    );
    warmupWitness = Math.max(warmupWitness, r.computeUnits);
    acc = csvm.coordinatorAccount(coordinator);
  }
  const everyone = clients.map((c) => addressBytes(c.address));
  let witnessMax = 0;
  let witnessTransactionBytes = 0;
  let tickNextRound = 0;
  // Rounds 0..2: every witness reports; the last client is never seen after round 0.
  for (let round = 0; round < 3; round++) {
    acc = csvm.coordinatorAccount(coordinator);
    const sel = roundSelection(acc.state.config, currentRound(acc.state));
    const lazy = encodeAddress(
      acc.state.epochState.clients[acc.state.epochState.clients.length - 1].id.signer,
    );
    const seen = round === 0 ? everyone : everyone.filter((s) => encodeAddress(s) !== lazy);
    for (const i of sel.witnessIndices()) {
      const r = must(
        await send(
          {
            kind: "Witness",
            witness: report(acc, i, seen, false),
            paramsDigest: DIGEST,
            // As the Solana backend sends it: the metadata tail counts in the size.
            metadata: {
              step: 1,
              loss: 3.5,
              tokensPerSec: 1e3,
              bandwidthPerSec: 1e5,
              efficiency: 1,
            },
          },
          signerOf(acc, i),
        ),
        "witness",
      );
      witnessMax = Math.max(witnessMax, r.computeUnits);
      witnessTransactionBytes = Math.max(witnessTransactionBytes, r.transactionBytes);
    }
    csvm.setClock(now += 10, BigInt(10 + round));
    tickNextRound = Math.max(
      tickNextRound,
      must(await send({ kind: "Tick" }, null), "tick round").computeUnits,
    );
  }
  acc = csvm.coordinatorAccount(coordinator);
  const prev = previousRound(acc.state)!;
  const prevSel = roundSelection(acc.state.config, prev);
  const prevClients = roundClients(acc.state, prev.height);
  const last = prevClients.length - 1;
  const reporter = signerOf(acc, 0);
  const check = { signer: prevClients[last].id.signer, proof: prevSel.committeeProof(last) };
  const one = await send({ kind: "HealthCheck", checks: [check] }, reporter);
  must(one, "health check");
  const perEntry = one.computeUnits;
  // The most entries one transaction carries: repeat the (still unhealthy) entry until the
  // transaction runs out of compute units or bytes.
  let healthChecksPerTransaction = 1;
  let healthCheckFull = perEntry;
  for (let k = 2; k <= 64; k++) {
    const r = await send({ kind: "HealthCheck", checks: Array(k).fill(check) }, reporter);
    if (!r.ok || r.transactionBytes > MAX_TRANSACTION_BYTES) break;
    healthChecksPerTransaction = k;
    healthCheckFull = r.computeUnits;
  }
  return {
    coordinator,
    clients: n,
    join,
    tickStartEpoch,
    warmupWitness,
    witnessMax,
    tickNextRound,
    healthCheckOne: perEntry,
    healthChecksPerTransaction,
    healthCheckFull,
    witnessTransactionBytes,
    accountBytes: ACCOUNT_SIZE,
  };
}

function encodeAddress(bytes: Uint8Array): string {
  return getAddressDecoder().decode(bytes);
}

if (import.meta.main) {
  const svm = await CoordinatorSvm.create();
  const rows = [await measureComputeUnits(16, svm), await measureComputeUnits(256, svm)];
  console.log(`limits: ${MAX_COMPUTE_UNITS} compute units, ${MAX_TRANSACTION_BYTES} bytes`);
  console.table(rows.map(({ coordinator: _, ...row }) => row));
}
