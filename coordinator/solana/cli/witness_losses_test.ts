import assert from "node:assert/strict";
import {
  appendTransactionMessageInstructions,
  type Blockhash,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressEncoder,
  getTransactionEncoder,
  type Instruction,
  type KeyPairSigner,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { coordinatorInstruction } from "../abi/mod.ts";
import { NO_DIGEST, type Witness } from "../../core/mod.ts";
import { DEFAULT_PROGRAM_ID } from "../rpc/mod.ts";
import { witnessEventsOf } from "./witness_losses.ts";
import { toHex } from "../../../common/mod.ts";

const witness: Witness = {
  proof: { position: 0, index: 2, witness: true },
  participantBloom: { keys: new BigUint64Array(1), bits: new Uint8Array(8) },
  broadcastBloom: { keys: new BigUint64Array(1), bits: new Uint8Array(8) },
  broadcastMerkle: new Uint8Array(32),
};
const metadata = { step: 7, loss: 2.75, tokensPerSec: 640, bandwidthPerSec: 1e4, efficiency: 0.8 };

async function wire(payer: KeyPairSigner, ixs: Instruction[]): Promise<Uint8Array> {
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash({
        blockhash: "11111111111111111111111111111111" as Blockhash,
        lastValidBlockHeight: 0n,
      }, m),
    (m) => appendTransactionMessageInstructions(ixs, m),
  );
  return new Uint8Array(
    getTransactionEncoder().encode(await signTransactionMessageWithSigners(message)),
  );
}

Deno.test("a witness transaction's metadata tail becomes a Witness event of its signer", async () => {
  const [client, coordinator, other] = await Promise.all([
    generateKeyPairSigner(),
    generateKeyPairSigner(),
    generateKeyPairSigner(),
  ]);
  const ix = (at: KeyPairSigner, withTail: boolean) =>
    coordinatorInstruction({
      programId: DEFAULT_PROGRAM_ID,
      coordinator: at.address,
      signer: client,
      ix: withTail
        ? { kind: "Witness", witness, paramsDigest: NO_DIGEST, metadata }
        : { kind: "Witness", witness, paramsDigest: NO_DIGEST },
    });
  const bytes = await wire(client, [ix(coordinator, true)]);
  const events = witnessEventsOf(bytes, DEFAULT_PROGRAM_ID, coordinator.address);
  assert.equal(events.length, 1);
  const [e] = events;
  assert.equal(e.client, toHex(new Uint8Array(getAddressEncoder().encode(client.address))));
  assert.equal(e.index, 2);
  assert.deepEqual(
    { step: e.metadata.step, loss: e.metadata.loss, tokensPerSec: e.metadata.tokensPerSec },
    { step: 7, loss: 2.75, tokensPerSec: 640 },
  );
  assert.deepEqual(
    witnessEventsOf(
      await wire(client, [ix(coordinator, false)]),
      DEFAULT_PROGRAM_ID,
      coordinator.address,
    ),
    [],
    "no tail: no loss to draw",
  );
  assert.deepEqual(witnessEventsOf(bytes, DEFAULT_PROGRAM_ID, other.address), [], "another run");
  assert.deepEqual(
    witnessEventsOf(bytes.subarray(0, 40), DEFAULT_PROGRAM_ID, coordinator.address),
    [],
  );
});
