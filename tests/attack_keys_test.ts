/**
 * Attack: authenticating without a secret key. ed25519's ZIP-215 rules (noble's default) accept
 * a small-order public key with R = the identity point and S = 0 for any message, so before the
 * strict check a peer could complete the handshake as the all-zero key or the identity point
 * (`Accepted`), then `Join` (`Ack`). Every encoding of every small-order point, as the public key
 * and as R, is played here against the real coordinator server and the real data server over
 * TCP; an honest key is the positive control.
 */
import assert from "node:assert/strict";
import { ed25519 } from "@noble/curves/ed25519.js";
import {
  decodeHandshakeMessage,
  encodeHandshakeMessage,
  handshakeSigningBytes,
  writeFrame,
} from "../net/mod.ts";
import {
  forgeWithSmallOrderKey,
  IDENTITY_POINT,
  signWithSmallOrderR,
  WEAK_POINTS,
  ZERO_KEY,
} from "../net/testing/weak_keys.ts";
import { rawConnect, type RawConnection, startTestServer } from "./support/server_driver.ts";
import {
  DATA_SERVER_CONTEXT,
  type DataServerEvent,
  decodeDataServerMessage,
  DummyDataProvider,
  encodeDataClientMessage,
  startDataServer,
} from "../data/mod.ts";
import {
  COORDINATOR_CONTEXT,
  decodeServerMessage,
  encodeClientMessage,
  type ServerEvent,
} from "../coordinator/server/mod.ts";
import { toHex } from "../common/mod.ts";

const honestSecret = new Uint8Array(32).fill(9);
const honestKey = ed25519.getPublicKey(honestSecret);

type Answer = (signed: Uint8Array) => { publicKey: Uint8Array; signature: Uint8Array };

/** A key the attacker names, with R = identity and S = 0: no secret key involved. */
const forgedAs = (publicKey: Uint8Array): Answer => () => ({
  publicKey,
  signature: forgeWithSmallOrderKey(),
});
/** The honest key signing with a small-order R. */
const honestWithR = (r: Uint8Array): Answer => (signed) => ({
  publicKey: honestKey,
  signature: signWithSmallOrderR(honestSecret, signed, r),
});
const honest: Answer = (signed) => ({
  publicKey: honestKey,
  signature: ed25519.sign(signed, honestSecret),
});

/** Every hostile answer: each small-order encoding as the key, then as R. */
const ATTACKS: { name: string; answer: Answer }[] = WEAK_POINTS.flatMap((weak) => [
  { name: `${weak.name} as public key`, answer: forgedAs(weak.bytes) },
  { name: `${weak.name} as R`, answer: honestWithR(weak.bytes) },
]);

/** Plays the client side of the handshake with `answer`; returns the server's verdict. */
async function handshake(
  address: string,
  context: string,
  answer: Answer,
): Promise<{ verdict: ReturnType<typeof decodeHandshakeMessage>; raw: RawConnection }> {
  const raw = await rawConnect(address);
  const first = await raw.frames.next();
  assert.ok(first !== null, "the server sends a challenge");
  const challenge = decodeHandshakeMessage(first);
  assert.equal(challenge.kind, "Challenge");
  if (challenge.kind !== "Challenge") throw new Error("unreachable");
  const signed = handshakeSigningBytes(context, challenge.nonce);
  await writeFrame(
    raw.conn,
    encodeHandshakeMessage({ kind: "ChallengeResponse", ...answer(signed) }),
  );
  const verdict = await raw.frames.next();
  assert.ok(verdict !== null, "the server answers the handshake");
  return { verdict: decodeHandshakeMessage(verdict), raw };
}

/** Sends `Join` on an accepted connection and returns the server's answer to it. */
async function join(raw: RawConnection): Promise<string> {
  await writeFrame(
    raw.conn,
    encodeClientMessage({ kind: "Join", requestId: 1, runId: "test-run" }),
  );
  for (;;) {
    const frame = await raw.frames.next();
    if (frame === null) return "closed";
    const msg = decodeServerMessage(frame);
    if (msg.kind !== "State" && msg.kind !== "StateDelta") return msg.kind;
  }
}

async function closedByServer(raw: RawConnection): Promise<boolean> {
  try {
    return (await raw.frames.next()) === null;
  } finally {
    raw.conn.close();
  }
}

Deno.test("the reported exploit: the all-zero key and the identity point, R = identity, S = 0, are refused by the coordinator", async () => {
  const events: ServerEvent[] = [];
  await using server = startTestServer({ onEvent: (e) => events.push(e) });
  for (const key of [ZERO_KEY, IDENTITY_POINT]) {
    const { verdict, raw } = await handshake(server.address, COORDINATOR_CONTEXT, forgedAs(key));
    assert.deepEqual(verdict, { kind: "Rejected", reason: "public key is a small-order point" });
    assert.ok(await closedByServer(raw), "the connection is closed after the refusal");
  }
  assert.deepEqual(server.host.pending(), [], "nobody joined");
  assert.equal(events.filter((e) => e.kind === "ConnectionRefused").length, 2);
  assert.ok(!events.some((e) => e.kind === "Connected"));
});

Deno.test("the coordinator refuses every small-order key and R, and an honest key still joins", async () => {
  // Every attack is a connection from 127.0.0.1: lift the per-address caps meant for the internet.
  await using server = startTestServer({ maxConnectionsPerAddress: 1024 });
  for (const attack of ATTACKS) {
    const { verdict, raw } = await handshake(server.address, COORDINATOR_CONTEXT, attack.answer);
    assert.equal(verdict.kind, "Rejected", attack.name);
    assert.ok(await closedByServer(raw), attack.name);
  }
  assert.deepEqual(server.host.pending(), []);
  const { verdict, raw } = await handshake(server.address, COORDINATOR_CONTEXT, honest);
  try {
    assert.deepEqual(verdict, { kind: "Accepted" });
    assert.equal(await join(raw), "Ack");
    assert.deepEqual(server.host.pending().map((p) => toHex(p.signer)), [
      toHex(honestKey),
    ]);
  } finally {
    raw.conn.close();
  }
});

Deno.test("the data server refuses every small-order key and R, and an honest key is served", async () => {
  const events: DataServerEvent[] = [];
  await using server = startDataServer({
    provider: new DummyDataProvider(8),
    authorize: () => "Allowed",
    onEvent: (e) => events.push(e),
  });
  for (const attack of ATTACKS) {
    const { verdict, raw } = await handshake(server.address, DATA_SERVER_CONTEXT, attack.answer);
    assert.equal(verdict.kind, "Rejected", attack.name);
    assert.ok(await closedByServer(raw), attack.name);
  }
  assert.ok(!events.some((e) => e.kind === "Connected"), "no hostile peer got connected");
  const { verdict, raw } = await handshake(server.address, DATA_SERVER_CONTEXT, honest);
  try {
    assert.deepEqual(verdict, { kind: "Accepted" });
    await writeFrame(raw.conn, encodeDataClientMessage({ kind: "GetInfo" }));
    const info = await raw.frames.next();
    assert.ok(info !== null);
    assert.equal(decodeDataServerMessage(info).kind, "Info");
  } finally {
    raw.conn.close();
  }
});
