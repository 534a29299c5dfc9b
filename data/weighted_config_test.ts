import assert from "node:assert/strict";
import { parseWeightedHttpConfig } from "./weighted_config.ts";
import { ConfigError, formatIssue } from "../common/mod.ts";
import { parseRunConfig } from "../coordinator/config/mod.ts";

/** Psyche's shared/data-provider/examples/sample-weighted-config.json, as published. */
const PSYCHE_SAMPLE = `{
	"shuffle": "DontShuffle",
	"providers": [
		[
			{
				"location": {
					"NumberedFiles": {
						"url_template": "http://localhost:8000/{}.ds",
						"start_index": 0,
						"n_left_pad_zeros": 3,
						"num_files": 2
					}
				},
				"token_size_in_bytes": "TwoBytes",
				"shuffle": "DontShuffle"
			},
			0.7
		],
		[
			{
				"location": {
					"NumberedFiles": {
						"url_template": "http://localhost:8001/{}.ds",
						"start_index": 0,
						"n_left_pad_zeros": 3,
						"num_files": 2
					}
				},
				"token_size_in_bytes": "TwoBytes",
				"shuffle": "DontShuffle"
			},
			0.3
		]
	]
}`;

const http = (url: string, extra: Record<string, unknown> = {}) => ({
  location: { SingleUrl: url },
  token_size_in_bytes: "FourBytes",
  shuffle: "DontShuffle",
  ...extra,
});

function problems(text: string): string[] {
  try {
    parseWeightedHttpConfig(text, "mix.json");
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    assert.equal(e.source, "mix.json");
    return e.issues.map(formatIssue);
  }
  assert.fail("expected a ConfigError");
}

Deno.test("Psyche's sample mix parses to its two weighted NumberedFiles datasets", () => {
  const mix = parseWeightedHttpConfig(PSYCHE_SAMPLE, "sample-weighted-config.json");
  assert.deepEqual(mix.shuffle, { kind: "DontShuffle" });
  assert.deepEqual(mix.providers.map((p) => p.weight), [0.7, 0.3]);
  assert.deepEqual(mix.providers[1].location, {
    kind: "Http",
    location: {
      kind: "NumberedFiles",
      urlTemplate: "http://localhost:8001/{}.ds",
      startIndex: 0,
      nLeftPadZeros: 3,
      numFiles: 2,
    },
    tokenSizeInBytes: "TwoBytes",
    shuffle: { kind: "DontShuffle" },
  });
});

Deno.test("a list of locations without weights is a LengthWeighted mix; seeds are read", () => {
  const seed = Array.from({ length: 32 }, (_, i) => i);
  const mix = parseWeightedHttpConfig(
    JSON.stringify({
      shuffle: { Seeded: seed },
      providers: [
        http("https://a.example/a.ds", { shuffle: { Seeded: seed } }),
        http("http://b/b"),
      ],
    }),
    "mix.json",
  );
  assert.deepEqual(mix.shuffle, { kind: "Seeded", seed: Uint8Array.from(seed) });
  assert.deepEqual(mix.providers.map((p) => p.weight), [null, null]);
  assert.deepEqual(mix.providers[0].location.shuffle, {
    kind: "Seeded",
    seed: Uint8Array.from(seed),
  });
  assert.equal(mix.providers[1].location.tokenSizeInBytes, "FourBytes");
});

Deno.test("every problem of a mix is listed with its JSON path", () => {
  const syntax = problems("{ providers: [] }");
  assert.equal(syntax.length, 1);
  assert.match(syntax[0], /^\(json\): not valid JSON: .*position 2/);
  assert.deepEqual(problems("[1, 2]"), [
    "(json) = [1, 2]: expected an object with keys shuffle and providers",
  ]);
  assert.deepEqual(problems(JSON.stringify({ shuffle: "DontShuffle", providers: [], x: 1 })), [
    "x: unknown key (known keys here: shuffle, providers)",
    "providers = []: must list at least one dataset",
  ]);
  const text = JSON.stringify({
    shuffle: { Seeded: [1, 2, 3] },
    providers: [
      [http("https://a.example/a.ds"), 0],
      [http("ftp://b.example/b.ds"), -1],
      http("https://c.example/c.ds"),
      [http("https://d.example/d.ds", { token_size_in_bytes: "ThreeBytes" }), "1"],
      [{
        location: {
          NumberedFiles: {
            url_template: "https://e.example/e.ds",
            start_index: 0,
            n_left_pad_zeros: 3,
            num_files: 0,
          },
        },
        token_size_in_bytes: "TwoBytes",
        shuffle: "DontShuffle",
        weight: 2,
      }, 1],
    ],
  });
  assert.deepEqual(problems(text), [
    "shuffle.Seeded = [1, 2, 3]: expected an array of 32 integers in 0..255, found 3 elements",
    "providers[0][1] = 0: expected a weight: a number > 0 (leave a dataset out rather than " +
    "weighting it 0)",
    "providers[1][1] = -1: expected a weight: a number > 0 (leave a dataset out rather than " +
    "weighting it 0)",
    'providers[1][0].location.SingleUrl = "ftp://b.example/b.ds": expected an http:// or ' +
    "https:// URL",
    "providers[2] = { location, token_size_in_bytes, shuffle }: expected a [location, weight] " +
    "pair, as providers[0] is (give every dataset a weight, or none)",
    'providers[3][1] = "1": expected a weight: a number > 0 (leave a dataset out rather than ' +
    "weighting it 0)",
    'providers[3][0].token_size_in_bytes = "ThreeBytes": expected one of "TwoBytes", "FourBytes"',
    "providers[4][0].weight: unknown key (known keys here: location, token_size_in_bytes, " +
    "shuffle)",
    'providers[4][0].location.NumberedFiles.url_template = "https://e.example/e.ds": must ' +
    "contain exactly one {} (where the file number goes)",
    "providers[4][0].location.NumberedFiles.num_files = 0: must be > 0",
  ]);
});

Deno.test("the example configs name a weighted mix and a preprocessed folder that parse", async () => {
  const root = new URL("../config/", import.meta.url);
  const mixUrl = new URL("weighted-http/mix.json", root);
  const mix = parseWeightedHttpConfig(await Deno.readTextFile(mixUrl), mixUrl.pathname);
  assert.deepEqual(mix.providers.map((p) => [p.location.location.kind, p.weight]), [
    ["NumberedFiles", 0.7],
    ["SingleUrl", 0.3],
  ]);
  assert.equal(mix.shuffle.kind, "Seeded");
  const kinds = [];
  for (const name of ["weighted-http", "preprocessed"]) {
    const url = new URL(`${name}/state.toml`, root);
    const run = parseRunConfig(await Deno.readTextFile(url), url.pathname);
    kinds.push(run.model.dataLocation.kind);
  }
  assert.deepEqual(kinds, ["WeightedHttp", "Preprocessed"]);
});
