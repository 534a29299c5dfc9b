/**
 * The Solana dashboard's loss curve: the witness reports a run's transactions carry. A witness
 * instruction may end with a metadata tail (step, loss, tokens/s, bandwidth/s, efficiency) the
 * program checks and ignores (coordinator/solana/abi/instructions.ts, `WitnessTail`); this reads
 * it back from a transaction's wire bytes as the dashboard's `Witness` events, so the same reducer
 * draws the curve as for the TCP coordinator. {@linkcode witnessEventsOf} is pure;
 * {@linkcode newWitnessEvents} reads the run's newest transactions through an RPC client.
 *
 * @module
 */
import {
  type Address,
  getAddressEncoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from "@solana/kit";
import type { DashboardServer } from "../../dashboard/mod.ts";
import { decodeCoordinatorInstruction } from "../abi/mod.ts";
import { toHex } from "../../../common/mod.ts";
import type { SolanaRpcClient } from "../rpc/mod.ts";

/** Newest transactions of the run read per call of {@linkcode newWitnessEvents}. */
export const SIGNATURES_PER_POLL = 100;
/** Signatures remembered as read (more than one poll's worth; oldest forgotten first). */
export const MAX_SEEN_SIGNATURES = 1000;

/** A witness report read from a transaction, as the dashboard's reducer takes it. */
export type WitnessEvent = Extract<Parameters<DashboardServer["publish"]>[0], { kind: "Witness" }>;

/**
 * The `Witness` events of the coordinator program's witness instructions (with a metadata tail)
 * in transaction `bytes`, in instruction order; none for a transaction that does not decode, an
 * instruction without a tail, or one for another program or account. The client is the
 * instruction's signer (its second account), the digest left out (the chain records its own).
 */
export function witnessEventsOf(
  bytes: Uint8Array,
  programId: Address,
  coordinator: Address,
): WitnessEvent[] {
  let message;
  try {
    message = getCompiledTransactionMessageDecoder().decode(
      getTransactionDecoder().decode(bytes).messageBytes,
    );
  } catch {
    return [];
  }
  if (!("instructions" in message)) return [];
  const accounts = message.staticAccounts;
  const out: WitnessEvent[] = [];
  for (const ix of message.instructions) {
    const indices = ix.accountIndices ?? [];
    if (accounts[ix.programAddressIndex] !== programId || ix.data === undefined) continue;
    if (accounts[indices[0]] !== coordinator || indices[1] === undefined) continue;
    let decoded;
    try {
      decoded = decodeCoordinatorInstruction(ix.data as Uint8Array);
    } catch {
      continue;
    }
    if (decoded.kind !== "Witness" || decoded.metadata === undefined) continue;
    const m = decoded.metadata;
    out.push({
      kind: "Witness",
      client: toHex(new Uint8Array(getAddressEncoder().encode(accounts[indices[1]]))),
      index: decoded.witness.proof.index,
      height: 0, // the round's height is not in the instruction; the dashboard does not use it
      metadata: {
        step: m.step,
        tokensPerSec: m.tokensPerSec,
        bandwidthPerSec: m.bandwidthPerSec,
        loss: m.loss,
        evals: [],
        promptResults: [],
        promptIndex: 0,
        efficiency: m.efficiency,
      },
      digest: null,
    });
  }
  return out;
}

/**
 * The witness reports (with their loss) of the run's newest transactions not in `seen`, oldest
 * first; `seen` then holds them (at most {@linkcode MAX_SEEN_SIGNATURES}, oldest forgotten).
 * Transactions the program refused carry no report.
 */
export async function newWitnessEvents(
  rpc: SolanaRpcClient,
  opts: { coordinator: Address; programId: Address; seen: Set<string> },
): Promise<WitnessEvent[]> {
  const { coordinator, programId, seen } = opts;
  const listed = await rpc.signaturesForAddress(coordinator, { limit: SIGNATURES_PER_POLL });
  const out: WitnessEvent[] = [];
  for (const { signature, failed } of listed.reverse()) {
    if (seen.has(signature)) continue;
    seen.add(signature);
    if (seen.size > MAX_SEEN_SIGNATURES) seen.delete(seen.values().next().value!);
    if (failed) continue;
    const bytes = await rpc.transactionBytes(signature);
    if (bytes !== null) out.push(...witnessEventsOf(bytes, programId, coordinator));
  }
  return out;
}
