import assert from "node:assert/strict";
import { escapeLabel, formatMetricValue, prometheusText } from "./prometheus.ts";
import {
  parsePrometheusText,
  sampleValue,
} from "../coordinator/dashboard/testing/prometheus_text.ts";

const SPECS = {
  a_total: ["counter", "Things counted."],
  b: ["gauge", "A level, by kind."],
  c_seconds: ["summary", "Time spent."],
  d: ["gauge", "Nothing yet."],
} as const;

Deno.test("families are declared before their samples and parse strictly", () => {
  const text = prometheusText(SPECS, [
    { name: "a_total", samples: [{ value: 3 }] },
    {
      name: "b",
      samples: [{ labels: { kind: "x" }, value: 1.5 }, { labels: { kind: "y" }, value: 0 }],
    },
    {
      name: "c_seconds",
      samples: [{ suffix: "_sum", value: 2.25 }, { suffix: "_count", value: 2 }],
    },
    { name: "d", samples: [] },
  ]);
  const scraped = parsePrometheusText(text);
  assert.equal(sampleValue(scraped, "a_total"), 3);
  assert.equal(sampleValue(scraped, "b", { kind: "x" }), 1.5);
  assert.equal(sampleValue(scraped, "c_seconds_sum"), 2.25);
  assert.equal(sampleValue(scraped, "c_seconds_count"), 2);
  assert.equal(scraped.types.get("d"), "gauge");
  assert.equal(scraped.help.get("b"), "A level, by kind.");
  assert.ok(text.startsWith("# HELP a_total Things counted.\n# TYPE a_total counter\na_total 3\n"));
});

Deno.test("label values are escaped and special values spelled out", () => {
  assert.equal(escapeLabel('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
  assert.deepEqual([NaN, Infinity, -Infinity, 0.5].map(formatMetricValue), [
    "NaN",
    "+Inf",
    "-Inf",
    "0.5",
  ]);
  const text = prometheusText(SPECS, [{
    name: "b",
    samples: [{ labels: { kind: 'q"\n' }, value: NaN }],
  }]);
  const scraped = parsePrometheusText(text);
  assert.ok(Number.isNaN(sampleValue(scraped, "b", { kind: 'q"\n' })));
});

Deno.test("a family written twice is refused", () => {
  assert.throws(
    () => prometheusText(SPECS, [{ name: "d", samples: [] }, { name: "d", samples: [] }]),
    /metric family d written twice/,
  );
});
