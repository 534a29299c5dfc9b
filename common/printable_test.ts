import assert from "node:assert/strict";
import {
  firstUnprintable,
  formatCodePoint,
  quoteForTerminal,
  unprintableProblem,
} from "./printable.ts";

/** Every class the module refuses, by example. */
const REFUSED: [string, number][] = [
  ["NUL", 0x0000],
  ["tab", 0x0009],
  ["newline", 0x000a],
  ["carriage return", 0x000d],
  ["escape", 0x001b],
  ["DEL", 0x007f],
  ["C1 CSI", 0x009b],
  ["soft hyphen", 0x00ad],
  ["Arabic letter mark", 0x061c],
  ["zero width space", 0x200b],
  ["zero width joiner", 0x200d],
  ["left-to-right mark", 0x200e],
  ["right-to-left mark", 0x200f],
  ["line separator", 0x2028],
  ["paragraph separator", 0x2029],
  ["LRE", 0x202a],
  ["RLE", 0x202b],
  ["PDF", 0x202c],
  ["LRO", 0x202d],
  ["RLO", 0x202e],
  ["LRI", 0x2066],
  ["RLI", 0x2067],
  ["FSI", 0x2068],
  ["PDI", 0x2069],
  ["byte order mark", 0xfeff],
  ["tag latin small a", 0xe0061],
];

Deno.test("every control, bidi and separator character is found, with its code point and position", () => {
  for (const [name, codePoint] of REFUSED) {
    const text = `ab${String.fromCodePoint(codePoint)}c`;
    assert.deepEqual(firstUnprintable(text), { codePoint, position: 3 }, name);
    assert.ok(
      unprintableProblem(text)!.startsWith(`contains ${formatCodePoint(codePoint)} at character 3`),
      name,
    );
  }
  assert.equal(formatCodePoint(0x0a), "U+000A");
  assert.equal(formatCodePoint(0xe0061), "U+E0061");
  assert.deepEqual(
    firstUnprintable("\uD800"),
    { codePoint: 0xd800, position: 1 },
    "lone surrogate",
  );
});

Deno.test("ordinary text, accents, CJK and emoji pass", () => {
  for (const text of ["llama-tiny-brown", "run_2024.06", "über-lauf", "训练", "run 🚀", ""]) {
    assert.equal(firstUnprintable(text), null, text);
    assert.equal(unprintableProblem(text), null, text);
  }
});

Deno.test("positions count code points, not UTF-16 units", () => {
  assert.deepEqual(firstUnprintable("🚀\n"), { codePoint: 0x0a, position: 2 });
});

Deno.test("quoteForTerminal escapes everything it would refuse, and nothing else", () => {
  assert.equal(quoteForTerminal("plain"), '"plain"');
  for (const [name, codePoint] of REFUSED) {
    const quoted = quoteForTerminal(`x${String.fromCodePoint(codePoint)}y`);
    assert.equal(firstUnprintable(quoted), null, name);
    assert.equal(JSON.parse(quoted), `x${String.fromCodePoint(codePoint)}y`, name);
  }
  assert.equal(quoteForTerminal("é🚀"), '"é🚀"');
});
