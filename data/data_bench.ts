/**
 * Data throughput, all in one run so the figures compare:
 * - sequences/s from the local provider over the bundled corpus (plain and shuffled), and
 *   from the same sequences as a Psyche-format parquet file (`Preprocessed`);
 * - the train split (2.6 MB) read whole: directly from disk, through the local
 *   provider, the HTTP provider (127.0.0.1 test server), the TCP data server, and the
 *   parquet provider (every block decoded anew: no cache).
 *
 * The parquet file is written at start into a temporary folder (snappy, as pyarrow writes by
 * default; row groups of 1000 rows), holding exactly the sequences the local provider cuts.
 *
 * Run: `deno bench -A data/data_bench.ts`. The providers and servers stay open for the
 * whole run; deno bench ends the process after the last bench.
 *
 * @module
 */
import { join } from "node:path";
import { BUNDLED_CORPUS_DIR, openBundledCorpus } from "./corpus.ts";
import { HttpDataProvider } from "./http.ts";
import { PreprocessedDataProvider } from "./preprocessed.ts";
import type { DataProvider } from "./provider.ts";
import { TcpDataProvider } from "./tcp_client.ts";
import { startDataServer } from "./tcp_server.ts";
import { startTestHttpServer } from "./testing/http_server.ts";
import { preprocessedParquet } from "./testing/parquet.ts";
import { decodeTokens } from "./token_format.ts";

const SEQ_LEN = 512;
const BATCH = 16;
const trainDir = join(BUNDLED_CORPUS_DIR, "train");
const seed = Uint8Array.from({ length: 32 }, (_, i) => i + 1);

const plain = await openBundledCorpus("train", { seqLen: SEQ_LEN });
const shuffled = await openBundledCorpus("train", {
  seqLen: SEQ_LEN,
  shuffle: { kind: "Seeded", seed },
});
const http = startTestHttpServer(trainDir);
const overHttp = await HttpDataProvider.open([`${http.url}/000.ds`], {
  seqLen: SEQ_LEN,
  tokenSize: "TwoBytes",
  vocabSize: 32000,
});
const tcp = startDataServer({ provider: plain, authorize: () => "Allowed" });
const overTcp = await TcpDataProvider.connect(tcp.address, { secretKey: new Uint8Array(32) });
const n = plain.numSequences;
const fileBytes = (await Deno.stat(join(trainDir, "000.ds"))).size;
console.log(`train split: ${fileBytes} bytes, ${n} sequences of ${SEQ_LEN} tokens`);

// The same sequences as a parquet file: one row of SEQ_LEN token ids each.
const parquetDir = await Deno.makeTempDir({ prefix: "psyche-bench-parquet-" });
globalThis.addEventListener("unload", () => Deno.removeSync(parquetDir, { recursive: true }));
{
  const all = await plain.getSamples({ start: 0, end: n - 1 });
  const inputs = Array.from(
    { length: n },
    (_, r) => Array.from(all.tokens.subarray(r * SEQ_LEN, (r + 1) * SEQ_LEN)),
  );
  await Deno.writeFile(
    join(parquetDir, "train-00000-of-00001.parquet"),
    preprocessedParquet({ inputs }, { rowGroupSize: 1000 }),
  );
}
const parquetBytes = (await Deno.stat(join(parquetDir, "train-00000-of-00001.parquet"))).size;
console.log(`the same as parquet: ${parquetBytes} bytes`);
const parquet = await PreprocessedDataProvider.open(parquetDir, {
  seqLen: SEQ_LEN,
  vocabSize: 32000,
});
const parquetUncached = await PreprocessedDataProvider.open(parquetDir, {
  seqLen: SEQ_LEN,
  vocabSize: 32000,
  cachedBlocks: 0,
});

let cursor = 0;
async function batches(provider: DataProvider, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const start = cursor;
    cursor = (cursor + BATCH) % (n - BATCH);
    await provider.getSamples({ start, end: start + BATCH - 1 });
  }
}

Deno.bench({
  name: `local provider, ${BATCH} x ${SEQ_LEN} tokens per batch, plain`,
  group: "batches",
  baseline: true,
  n: 500,
  fn: () => batches(plain, 1),
});
Deno.bench({
  name: `local provider, ${BATCH} x ${SEQ_LEN} tokens per batch, shuffled`,
  group: "batches",
  n: 500,
  fn: () => batches(shuffled, 1),
});

Deno.bench({
  name: `parquet provider, ${BATCH} x ${SEQ_LEN} tokens per batch, in order`,
  group: "batches",
  n: 500,
  fn: () => batches(parquet, 1),
});
let random = 1;
Deno.bench({
  name: `parquet provider, ${BATCH} x ${SEQ_LEN} tokens per batch, random, no cache`,
  group: "batches",
  n: 100,
  async fn() {
    random = (random * 1103515245 + 12345) % 2147483648;
    const start = random % (n - BATCH);
    await parquetUncached.getSamples({ start, end: start + BATCH - 1 });
  },
});

const WHOLE = { start: 0, end: n - 1 };
Deno.bench({
  name: "read file directly and decode (Deno.readFile)",
  group: "whole split",
  baseline: true,
  n: 30,
  async fn() {
    const bytes = await Deno.readFile(join(trainDir, "000.ds"));
    const used = n * SEQ_LEN * 2;
    decodeTokens(bytes.subarray(0, used), "u16", new Uint32Array(n * SEQ_LEN), 0, {
      file: "000.ds",
      byteOffset: 0,
    }, 32000);
  },
});
Deno.bench({
  name: "local provider, one batch of every sequence",
  group: "whole split",
  n: 30,
  fn: async () => void await plain.getSamples(WHOLE),
});
Deno.bench({
  name: "HTTP provider (127.0.0.1), one batch of every sequence",
  group: "whole split",
  n: 30,
  fn: async () => void await overHttp.getSamples(WHOLE),
});
Deno.bench({
  name: "TCP data server (127.0.0.1), one batch of every sequence",
  group: "whole split",
  n: 30,
  fn: async () => void await overTcp.getSamples(WHOLE),
});
Deno.bench({
  name: "parquet provider, one batch of every sequence (no cache)",
  group: "whole split",
  n: 30,
  fn: async () => void await parquetUncached.getSamples(WHOLE),
});
