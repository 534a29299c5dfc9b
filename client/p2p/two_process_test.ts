import assert from "node:assert/strict";
import { createP2PNode } from "./node.ts";
import { PayloadService } from "./payload_service.ts";
import { benchPayload, spawnProvider } from "./bench_provider.ts";
import { testPublic, testSecret } from "./test_util.ts";
import { contentHash } from "./content_store.ts";

Deno.test("a payload crosses processes, and the provider process exits after stopping", async () => {
  const size = 4 * 1024 * 1024 + 3;
  const provider = await spawnProvider(41, size, [42]);
  try {
    assert.equal(provider.hash, contentHash(benchPayload(size)));
    await using node = await createP2PNode({
      secretKey: testSecret(42),
      allowedPeers: [testPublic(41)],
    });
    const payloads = await PayloadService.start(node);
    await node.connect(provider.address);
    const bytes = await payloads.fetch(provider.hash, {
      providers: [testPublic(41)],
      expectedSize: size,
    });
    assert.equal(contentHash(bytes), provider.hash);
  } finally {
    const status = await provider.stop(10_000);
    assert.equal(status.code, 0);
  }
});
