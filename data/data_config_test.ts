import assert from "node:assert/strict";
import { parseDataConfig, tokenSizeBytes } from "./data_config.ts";
import { ConfigError } from "../common/mod.ts";

const SEED = Array.from({ length: 32 }, (_, i) => i + 1);

function dataToml(overrides: Record<string, string | null> = {}): string {
  const fields: Record<string, string | null> = {
    dir: '"corpus/train"',
    token_size: '"TwoBytes"',
    seq_len: "128",
    shuffle_seed: `[${SEED.join(", ")}]`,
    ...overrides,
  };
  return Object.entries(fields)
    .filter(([, value]) => value !== null)
    .map(([key, value]) => `${key} = ${value}`)
    .join("\n");
}

function issuesOf(text: string): string[] {
  try {
    parseDataConfig(text, "data.toml");
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.source, "data.toml");
    return error.issues.map((issue) => issue.path);
  }
  assert.fail("expected a ConfigError");
}

Deno.test("parseDataConfig reads every field", () => {
  const config = parseDataConfig(dataToml({ token_size: '"FourBytes"' }), "data.toml");
  assert.equal(config.dir, "corpus/train");
  assert.equal(config.tokenSize, "FourBytes");
  assert.equal(config.seqLen, 128);
  assert.deepEqual([...config.shuffleSeed], SEED);
  assert.equal(tokenSizeBytes(config.tokenSize), 4);
  assert.equal(tokenSizeBytes("TwoBytes"), 2);
});

Deno.test("parseDataConfig resolves a relative dir against baseDir, keeps absolute ones", () => {
  const relative = parseDataConfig(dataToml(), "x", { baseDir: "/etc/run" });
  assert.equal(relative.dir, "/etc/run/corpus/train");
  const absolute = parseDataConfig(dataToml({ dir: '"/data/x"' }), "x", { baseDir: "/etc/run" });
  assert.equal(absolute.dir, "/data/x");
});

Deno.test("parseDataConfig names each bad key and reports them all together", () => {
  assert.deepEqual(issuesOf(dataToml({ dir: null })), ["dir"]);
  assert.deepEqual(issuesOf(dataToml({ token_size: '"ThreeBytes"' })), ["token_size"]);
  assert.deepEqual(issuesOf(dataToml({ seq_len: "0" })), ["seq_len"]);
  assert.deepEqual(issuesOf(dataToml({ seq_len: '"128"' })), ["seq_len"]);
  assert.deepEqual(issuesOf(dataToml({ shuffle_seed: "[1, 2, 3]" })), ["shuffle_seed"]);
  assert.deepEqual(issuesOf(dataToml({ shuffle_seed: `[${[...SEED.slice(1), 256]}]` })), [
    "shuffle_seed",
  ]);
  assert.deepEqual(issuesOf(dataToml({ dir: '""' })), ["dir"]);
  assert.deepEqual(issuesOf(dataToml({ extra: "1" })), ["extra"]);
  assert.deepEqual(
    issuesOf(dataToml({ dir: "3", token_size: null, seq_len: "-1" })),
    ["dir", "token_size", "seq_len"],
  );
});

Deno.test("parseDataConfig reports TOML syntax errors with a position", () => {
  try {
    parseDataConfig("dir = \nseq_len = 3", "bad.toml");
    assert.fail("expected a ConfigError");
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.match(error.message, /bad\.toml: 1 problem:\n {2}- \(toml\): syntax error at line 1/);
  }
});

Deno.test("ConfigError messages show key, found value and rule", () => {
  try {
    parseDataConfig(dataToml({ seq_len: "70000000000" }), "data.toml");
    assert.fail("expected a ConfigError");
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.issues.length, 1);
    assert.match(error.message, /seq_len = 70000000000: out of range: expected a u32 integer/);
  }
});
