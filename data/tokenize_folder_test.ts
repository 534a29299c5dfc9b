import assert from "node:assert/strict";
import { DataError } from "./errors.ts";
import { BOS_ID, decodeTokens, EOS_ID } from "./llama_tokenizer.ts";
import { LocalDataProvider } from "./local.ts";
import { closing } from "./testing/fixtures.ts";
import { tokenizeFolder } from "./tokenize_folder.ts";

Deno.test("tokenizeFolder turns .txt files into readable .ds datasets", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/in`);
    await Deno.writeTextFile(`${dir}/in/b.txt`, "The quick brown fox jumps over the lazy dog.");
    await Deno.writeTextFile(`${dir}/in/a.txt`, "Hello world");
    await Deno.writeTextFile(`${dir}/in/skip.md`, "not text input");
    const files = await tokenizeFolder(`${dir}/in`, `${dir}/out`);
    assert.deepEqual(files.map((f) => f.output.split("/").pop()), ["a.ds", "b.ds"]);
    const a = await Deno.readFile(`${dir}/out/a.ds`);
    const ids = Array.from(new Uint16Array(a.buffer));
    assert.equal(ids[0], BOS_ID);
    assert.equal(ids[ids.length - 1], EOS_ID);
    assert.equal(decodeTokens(ids), "Hello world");
    await using p = closing(
      await LocalDataProvider.open(`${dir}/out`, {
        seqLen: 4,
        tokenSize: "TwoBytes",
        vocabSize: 32000,
      }),
    );
    assert.ok(p.numSequences >= 3);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tokenizeFolder names a missing folder, an empty one and bad UTF-8", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await assert.rejects(tokenizeFolder(`${dir}/none`, `${dir}/out`), /Cannot read input folder/);
    await assert.rejects(tokenizeFolder(dir, `${dir}/out`), /has no \.txt files/);
    await Deno.writeFile(`${dir}/bad.txt`, new Uint8Array([0x66, 0xff, 0x66]));
    await assert.rejects(tokenizeFolder(dir, `${dir}/out`), (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.match(e.message, /bad\.txt: not valid UTF-8/);
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
