import process from "node:process";
import { spawnProvider } from "../bench_provider.ts";
import { createP2PNode } from "../node.ts";
import { PayloadService } from "../payload_service.ts";
import { testPublic, testSecret } from "../test_util.ts";
const SIZE = 64 * 1024 * 1024;
const child = await spawnProvider(1, SIZE, [2]);
const fetcher = await createP2PNode({ secretKey: testSecret(2), allowedPeers: [testPublic(1)] });
const client = await PayloadService.start(fetcher);
await fetcher.connect(child.address);
async function raw(port: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const h = new Uint8Array(8);
  for (let g = 0; g < 8;) g += (await conn.read(h.subarray(g)))!;
  const out = new Uint8Array(SIZE);
  for (let g = 0; g < SIZE;) g += (await conn.read(out.subarray(g)))!;
  conn.close();
}
function childCpu(pid: number) {
  const f = Deno.readTextFileSync(`/proc/${pid}/stat`).split(" ");
  return (Number(f[13]) + Number(f[14])) * 10;
}
const pid = Number(
  new TextDecoder().decode(
    new Deno.Command("pgrep", { args: ["-f", "bench_provider.ts 1 67108864"] }).outputSync().stdout,
  ).trim().split("\n")[0],
);
for (
  const [name, fn] of [["raw", () => raw(child.rawPort)], [
    "payload",
    () => client.fetch(child.hash, { providers: [testPublic(1)] }),
  ]] as const
) {
  await fn();
  const c0 = process.cpuUsage();
  const k0 = childCpu(pid);
  const t0 = performance.now();
  for (let i = 0; i < 5; i++) await fn();
  const c = process.cpuUsage(c0);
  const k = childCpu(pid) - k0;
  const t = (performance.now() - t0) / 5;
  console.log(
    name,
    "wall ms",
    t.toFixed(0),
    "MB/s",
    (SIZE / 1e6 / (t / 1000)).toFixed(0),
    "receiver cpu ms",
    ((c.user + c.system) / 5000).toFixed(0),
    "sender cpu ms",
    (k / 5).toFixed(0),
  );
}
await child.stop();
await fetcher.stop();
