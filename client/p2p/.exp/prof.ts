import { spawnProvider } from "../bench_provider.ts";
import { createP2PNode } from "../node.ts";
import { PayloadService } from "../payload_service.ts";
import { testPublic, testSecret } from "../test_util.ts";
const SIZE = 64 * 1024 * 1024;
const child = await spawnProvider(1, SIZE, [2]);
const fetcher = await createP2PNode({ secretKey: testSecret(2), allowedPeers: [testPublic(1)] });
const client = await PayloadService.start(fetcher);
await fetcher.connect(child.address);
for (let i = 0; i < 8; i++) {
  const t = performance.now();
  await client.fetch(child.hash, { providers: [testPublic(1)] });
  console.log("fetch ms", (performance.now() - t).toFixed(0));
}
await child.stop();
await fetcher.stop();
