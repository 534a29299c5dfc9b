import assert from "node:assert/strict";
import { type ConfigIssue, formatIssue, renderValue, tomlTypeName } from "./config_error.ts";
import { joinPath, parseTomlText, TableReader } from "./config_reader.ts";

function reader(text: string): { t: TableReader; issues: ConfigIssue[] } {
  const issues: ConfigIssue[] = [];
  const doc = parseTomlText(text, issues);
  assert.ok(doc !== undefined, JSON.stringify(issues));
  return { t: new TableReader(doc, "", issues), issues };
}

Deno.test("integer widths: in range accepted, out of range and non-integers rejected", () => {
  const { t, issues } = reader("a = 255\nb = 256\nc = 4294967295\nd = 1.5\ne = -1\nf = true");
  assert.equal(t.integer("a", "u8"), 255);
  assert.equal(t.integer("b", "u8"), undefined);
  assert.equal(t.integer("c", "u32"), 4294967295);
  assert.equal(t.integer("d", "u64"), undefined);
  assert.equal(t.integer("e", "u16"), undefined);
  assert.equal(t.integer("f", "u16"), undefined);
  assert.deepEqual(issues.map(formatIssue), [
    "b = 256: out of range: expected a u8 integer (0..255)",
    "d = 1.5: expected a u64 integer (0..9007199254740991), found a float",
    "e = -1: out of range: expected a u16 integer (0..65535)",
    "f = true: expected a u16 integer (0..65535), found a boolean",
  ]);
});

Deno.test("optional getters: null when absent, value when present, undefined when mistyped", () => {
  const { t, issues } = reader('s = "x"\nn = "y"');
  assert.equal(t.optionalString("s"), "x");
  assert.equal(t.optionalString("absent"), null);
  assert.equal(t.optionalFloat("n"), undefined);
  assert.equal(t.optionalFloat("absent2"), null);
  assert.equal(t.integerOr("absent3", "u8", 7), 7);
  t.finish();
  assert.deepEqual(issues.map((i) => i.path), ["n"]);
});

Deno.test("finish reports keys nobody read, with the known keys", () => {
  const { t, issues } = reader("a = 1\nb = 2\n[sub]\nc = 3");
  t.integer("a", "u8");
  const sub = t.table("sub");
  assert.ok(sub);
  sub.finish();
  t.finish();
  assert.deepEqual(issues.map(formatIssue), [
    "sub.c: unknown key (known keys here: none)",
    "b: unknown key (known keys here: a, sub)",
  ]);
});

Deno.test("variant: bare string, one-key table, and the errors around them", () => {
  const { t, issues } = reader(
    'u = "Dummy"\nv = { Server = "h:1" }\nw = { A = 1, B = 2 }\nx = "Nope"\ny = 3\nz = {}',
  );
  const names = ["Dummy", "Server", "A", "B"];
  const u = t.variant("u", names);
  assert.equal(u?.tag, "Dummy");
  assert.equal(u?.holder, null);
  const v = t.variant("v", names);
  assert.equal(v?.path, "v.Server");
  assert.equal(v && t.payload(v, "a string")?.string("Server"), "h:1");
  assert.equal(t.variant("w", names), undefined);
  assert.equal(t.variant("x", names), undefined);
  assert.equal(t.variant("y", names), undefined);
  assert.equal(t.variant("z", names), undefined);
  assert.ok(u);
  assert.equal(t.payload(u, "a string"), undefined);
  assert.deepEqual(issues.map((i) => i.path), ["w", "x", "y", "z", "u.Dummy"]);
  assert.match(issues[0].message, /exactly one variant .* found 2 \(A, B\)/);
  assert.match(issues[1].message, /unknown variant "Nope"/);
  assert.match(issues[4].message, /needs a value/);
});

Deno.test("bytes: exactly N integers in 0..255", () => {
  const { t, issues } = reader('a = [1, 2, 3]\nb = [1, 2]\nc = [1, 256, 3]\nd = [1, "x", 3]');
  assert.deepEqual(t.bytes("a", 3), new Uint8Array([1, 2, 3]));
  assert.equal(t.bytes("b", 3), undefined);
  assert.equal(t.bytes("c", 3), undefined);
  assert.equal(t.bytes("d", 3), undefined);
  assert.deepEqual(issues.map((i) => i.message), [
    "expected an array of 3 integers in 0..255, found 2 elements",
    "element 1 is 256: expected an array of 3 integers in 0..255",
    'element 1 is "x": expected an array of 3 integers in 0..255',
  ]);
});

Deno.test("syntax errors and unsafe keys become one issue", () => {
  const issues: ConfigIssue[] = [];
  assert.equal(parseTomlText("a = [1,\nb = ", issues), undefined);
  assert.equal(issues.length, 1);
  assert.match(issues[0].message, /^syntax error at line \d+, column \d+/);
  const unsafe: ConfigIssue[] = [];
  assert.equal(parseTomlText("__proto__ = 1", unsafe), undefined);
  assert.equal(unsafe.length, 1);
});

Deno.test("paths quote keys that are not bare", () => {
  assert.equal(joinPath("", "a"), "a");
  assert.equal(joinPath("a.b", "c_d-1"), "a.b.c_d-1");
  assert.equal(joinPath("a", "x.y"), 'a."x.y"');
});

Deno.test("rendered values are short and typed names read naturally", () => {
  assert.equal(renderValue("x"), '"x"');
  assert.equal(renderValue([1, "a"]), '[1, "a"]');
  assert.equal(renderValue({ a: 1, b: 2 }), "{ a, b }");
  assert.equal(renderValue({}), "{}");
  const long = renderValue(Array.from({ length: 100 }, (_, i) => i));
  assert.equal(long.length, 80);
  assert.ok(long.endsWith("..."));
  assert.equal(tomlTypeName(1), "an integer");
  assert.equal(tomlTypeName(1.5), "a float");
  assert.equal(tomlTypeName([]), "an array");
  assert.equal(tomlTypeName({}), "a table");
});

Deno.test("integers beyond 2^53 - 1 are refused wherever a number is read, never rounded", () => {
  const big = "9007199254740993"; // 2^53 + 1: as a double it would read as 2^53
  const { t, issues } = reader(
    `a = ${big}\nb = ${big}\nc = -${big}\nd = ${big}\ne = ${big}\nf = 9007199254740991\ng = 1e300`,
  );
  assert.equal(t.float("a"), undefined);
  assert.equal(t.optionalFloat("b"), undefined);
  assert.equal(t.float("c"), undefined);
  assert.equal(t.integer("d", "u64"), undefined);
  assert.equal(t.seconds("e"), undefined);
  assert.equal(t.float("f"), 9007199254740991, "2^53 - 1 is exact");
  assert.equal(t.float("g"), 1e300, "floats are the validator's to range-check");
  const inexact = "beyond ±(2^53 − 1) = ±9007199254740991 cannot be held exactly";
  assert.deepEqual(issues.map(formatIssue), [
    `a = ${big}: integer ${inexact}; write a float if you mean one`,
    `b = ${big}: integer ${inexact}; write a float if you mean one`,
    `c = -${big}: integer ${inexact}; write a float if you mean one`,
    `d = ${big}: out of range: expected a u64 integer (0..9007199254740991) (an integer ${inexact})`,
    `e = ${big}: out of range: expected seconds (0..1125899906842.623, at most millisecond precision)`,
  ]);
});

Deno.test("strings and keys are rendered with control and bidi characters escaped", () => {
  assert.equal(renderValue("run\n\u202Eid"), '"run\\n\\u202eid"');
  assert.equal(joinPath("config", "a\u2066b"), 'config."a\\u2066b"');
  assert.equal(renderValue({ "x\ny": 1 }), '{ "x\\ny" }');
});
