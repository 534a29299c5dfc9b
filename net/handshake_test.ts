import assert from "node:assert/strict";
import { ed25519 } from "@noble/curves/ed25519.js";
import fc from "fast-check";
import { HandshakeError, ProtocolError } from "./errors.ts";
import { FrameReader, writeFrame } from "./frame.ts";
import {
  answerChallenge,
  clientHandshake,
  decodeHandshakeMessage,
  encodeHandshakeMessage,
  type HandshakeMessage,
  serverHandshake,
  verifyChallengeAnswer,
} from "./handshake.ts";

const CONTEXT = "test service v1";
const key = (fill: number) => new Uint8Array(32).fill(fill);

Deno.test("handshake messages round-trip and reject bad bytes", () => {
  const messages: HandshakeMessage[] = [
    { kind: "Challenge", nonce: key(1), context: "ctx" },
    { kind: "ChallengeResponse", publicKey: key(2), signature: new Uint8Array(64).fill(3) },
    { kind: "Accepted" },
    { kind: "Rejected", reason: "no" },
  ];
  for (const m of messages) assert.deepEqual(decodeHandshakeMessage(encodeHandshakeMessage(m)), m);
  assert.throws(() => decodeHandshakeMessage(new Uint8Array([9])), /unknown tag 9/);
  assert.throws(() => decodeHandshakeMessage(new Uint8Array([])), ProtocolError);
  const response = encodeHandshakeMessage(messages[1]);
  assert.throws(
    () => decodeHandshakeMessage(response.subarray(0, response.length - 1)),
    /ChallengeResponse: field "signature" needs 64 bytes/,
  );
  const padded = new Uint8Array([...encodeHandshakeMessage({ kind: "Accepted" }), 0]);
  assert.throws(() => decodeHandshakeMessage(padded), /1 unexpected trailing bytes/);
});

Deno.test("a challenge answer verifies only for the same key, context and nonce", () => {
  const nonce = key(7);
  const { publicKey, signature } = answerChallenge(key(5), CONTEXT, nonce);
  assert.deepEqual(publicKey, ed25519.getPublicKey(key(5)));
  assert.ok(verifyChallengeAnswer(publicKey, signature, CONTEXT, nonce));
  assert.ok(!verifyChallengeAnswer(publicKey, signature, "other service", nonce));
  assert.ok(!verifyChallengeAnswer(publicKey, signature, CONTEXT, key(8)));
  assert.ok(!verifyChallengeAnswer(ed25519.getPublicKey(key(6)), signature, CONTEXT, nonce));
});

/** Runs one server handshake per accepted connection; resolves with their outcomes. */
async function withServer(
  clients: number,
  body: (port: number) => Promise<void>,
): Promise<Array<Uint8Array | Error>> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const outcomes: Promise<Uint8Array | Error>[] = [];
  const accepting = (async () => {
    for (let i = 0; i < clients; i++) {
      const conn = await listener.accept();
      const frames = new FrameReader(conn, { maxFrameBytes: 4096 });
      outcomes.push(
        serverHandshake(conn, frames, { context: CONTEXT })
          .catch((e: Error) => e)
          .finally(() => conn.close()),
      );
    }
  })();
  try {
    await body(listener.addr.port);
    await accepting;
    return await Promise.all(outcomes);
  } finally {
    listener.close();
  }
}

Deno.test("server binds each TCP connection to the client's ed25519 key", async () => {
  const outcomes = await withServer(2, async (port) => {
    for (const fill of [11, 12]) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        const frames = new FrameReader(conn, { maxFrameBytes: 4096 });
        await clientHandshake(conn, frames, { context: CONTEXT, secretKey: key(fill) });
      } finally {
        conn.close();
      }
    }
  });
  assert.deepEqual(outcomes, [ed25519.getPublicKey(key(11)), ed25519.getPublicKey(key(12))]);
});

Deno.test("server rejects a forged signature and tells the client", async () => {
  let clientSaw: HandshakeMessage | null = null;
  const outcomes = await withServer(1, async (port) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      const frames = new FrameReader(conn, { maxFrameBytes: 4096 });
      const challenge = decodeHandshakeMessage((await frames.next())!);
      assert.equal(challenge.kind, "Challenge");
      // Claim key 21's identity with key 22's signature.
      const forged = answerChallenge(key(22), CONTEXT, (challenge as { nonce: Uint8Array }).nonce);
      const response: HandshakeMessage = {
        kind: "ChallengeResponse",
        publicKey: ed25519.getPublicKey(key(21)),
        signature: forged.signature,
      };
      await writeFrame(conn, encodeHandshakeMessage(response));
      clientSaw = decodeHandshakeMessage((await frames.next())!);
    } finally {
      conn.close();
    }
  });
  assert.deepEqual(clientSaw, { kind: "Rejected", reason: "invalid signature" });
  assert.ok(outcomes[0] instanceof HandshakeError);
});

Deno.test("client refuses to sign a challenge for another service", async () => {
  const outcomes = await withServer(1, async (port) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      const frames = new FrameReader(conn, { maxFrameBytes: 4096 });
      await assert.rejects(
        clientHandshake(conn, frames, { context: "coordinator v1", secretKey: key(3) }),
        /Server's context is "test service v1", expected "coordinator v1"/,
      );
    } finally {
      conn.close();
    }
  });
  assert.ok(outcomes[0] instanceof Error);
});

Deno.test("a handshake aborts when its signal fires", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: listener.addr.port });
  const silent = await listener.accept();
  try {
    const frames = new FrameReader(conn, { maxFrameBytes: 4096 });
    await assert.rejects(
      clientHandshake(conn, frames, {
        context: CONTEXT,
        secretKey: key(1),
        signal: AbortSignal.timeout(50),
      }),
      (e: unknown) => (e as Error).name === "TimeoutError",
    );
  } finally {
    conn.close();
    silent.close();
    listener.close();
  }
});

Deno.test("decoding arbitrary bytes either yields a handshake message or throws ProtocolError", () => {
  fc.assert(
    fc.property(
      fc.tuple(fc.integer({ min: 0, max: 5 }), fc.uint8Array({ maxLength: 120 })),
      ([tag, body]) => {
        const bytes = Uint8Array.of(tag, ...body);
        try {
          assert.deepEqual(encodeHandshakeMessage(decodeHandshakeMessage(bytes)), bytes);
        } catch (e) {
          if (!(e instanceof ProtocolError)) throw e;
        }
      },
    ),
    { numRuns: 2000 },
  );
});
