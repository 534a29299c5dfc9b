import assert from "node:assert/strict";
import { hubDownload, hubEndpoint, hubTarget } from "./hub_env.ts";
import { UsageError } from "../../common/mod.ts";

const envOf = (table: Record<string, string>) => (name: string) => table[name];

Deno.test("hub settings: --hub-url, else HF_ENDPOINT, else the public Hub; HF_TOKEN", () => {
  assert.equal(hubEndpoint({ hubUrl: null }, envOf({})), "https://huggingface.co");
  assert.equal(hubEndpoint({ hubUrl: null }, envOf({ HF_ENDPOINT: "http://m" })), "http://m");
  assert.equal(hubEndpoint({ hubUrl: "http://f" }, envOf({ HF_ENDPOINT: "http://m" })), "http://f");
  assert.equal(hubTarget({ hubRepo: null, hubUrl: null }, envOf({})), null);
  assert.deepEqual(hubTarget({ hubRepo: "o/n", hubUrl: null }, envOf({ HF_TOKEN: "hf_1" })), {
    repoId: "o/n",
    hubUrl: "https://huggingface.co",
    token: "hf_1",
  });
  assert.equal(
    hubTarget({ hubRepo: "o/n", hubUrl: null, hubUploadAttempts: 2 }, envOf({ HF_TOKEN: "hf_1" }))
      ?.attempts,
    2,
  );
  assert.throws(
    () => hubTarget({ hubRepo: "o/n", hubUrl: null }, envOf({})),
    (e) => e instanceof UsageError && /--hub-repo needs HF_TOKEN.*which is not set/.test(e.message),
  );
  assert.throws(
    () => hubTarget({ hubRepo: "o/n", hubUrl: null }, envOf({ HF_TOKEN: "abc" })),
    /does not start with hf_/,
  );
  assert.deepEqual(hubDownload({ hubUrl: null }, envOf({ HF_HOME: "/h", HF_TOKEN: "hf_2" })), {
    endpoint: "https://huggingface.co",
    cacheDir: "/h/hub",
    token: "hf_2",
  });
  assert.deepEqual(hubDownload({ hubUrl: "http://f" }, envOf({ HOME: "/u" })), {
    endpoint: "http://f",
    cacheDir: "/u/.cache/huggingface/hub",
  });
  assert.equal(hubDownload({ hubUrl: null }, envOf({})), null);
});
