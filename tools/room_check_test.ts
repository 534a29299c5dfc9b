import assert from "node:assert/strict";
import {
  checkRooms,
  codeOnly,
  formatViolation,
  type HouseGraph,
  isFace,
  isTestCode,
  roomOf,
  ruleProblems,
} from "./room_check.ts";
import { type Room, ROOMS } from "./rooms.ts";

const rooms: Room[] = [
  { path: "base/", job: "words", uses: [], pure: true, packages: ["npm:smol-toml"] },
  { path: "io/", job: "edges", uses: ["base/"] },
  { path: "app/", job: "top", uses: ["base/", "io/"] },
  { path: "app/part/", job: "a part", uses: ["base/"] },
  { path: "tests/", job: "cross-module tests", uses: [] },
];

function graph(imports: [string, string][], texts: Record<string, string> = {}): HouseGraph {
  const paths = new Set([...imports.flat().filter((p) => !p.includes(":")), ...Object.keys(texts)]);
  return {
    files: [...paths].map((path) => ({ path, text: texts[path] ?? "" })),
    imports: imports.map(([from, to], i) => ({ from, to, line: i + 1 })),
  };
}

const rulesBroken = (g: HouseGraph) => checkRooms(g, rooms).map((v) => `${v.file} ${v.rule}`);

Deno.test("a file belongs to the room with the longest path holding it", () => {
  assert.equal(roomOf("app/x.ts", rooms)?.path, "app/");
  assert.equal(roomOf("app/part/y.ts", rooms)?.path, "app/part/");
  assert.equal(roomOf("elsewhere/z.ts", rooms), undefined);
  assert.deepEqual(rulesBroken(graph([], { "elsewhere/z.ts": "" })), ["elsewhere/z.ts room"]);
});

Deno.test("product code imports only the rooms its room uses", () => {
  assert.deepEqual(rulesBroken(graph([["app/a.ts", "io/mod.ts"], ["io/b.ts", "base/mod.ts"]])), []);
  assert.deepEqual(rulesBroken(graph([["io/b.ts", "app/mod.ts"]])), ["io/b.ts uses"]);
  // A part is a room of its own: its parent's uses are not its uses.
  assert.deepEqual(rulesBroken(graph([["app/part/c.ts", "io/mod.ts"]])), ["app/part/c.ts uses"]);
  // Inside a room, anything goes.
  assert.deepEqual(rulesBroken(graph([["io/b.ts", "io/deep/internal.ts"]])), []);
});

Deno.test("another room is reached only through a mod.ts", () => {
  assert.deepEqual(rulesBroken(graph([["app/a.ts", "io/tcp.ts"]])), ["app/a.ts face"]);
  assert.deepEqual(rulesBroken(graph([["app/a.ts", "io/tcp/mod.ts"]])), [], "a folder's face");
  assert.ok(isFace("cli/entry.ts", { path: "cli/", job: "", uses: [], face: "cli/entry.ts" }));
  assert.ok(!isFace("io/mod.ts", rooms[2]));
});

Deno.test("test code may use any room's face and any harness; product code no test code", () => {
  assert.deepEqual(
    rulesBroken(graph([
      ["base/a_test.ts", "app/mod.ts"],
      ["base/a_test.ts", "app/testing/fixtures.ts"],
      ["io/testing/h.ts", "tests/support/run.ts"],
    ])),
    [],
  );
  assert.deepEqual(rulesBroken(graph([["base/a_test.ts", "app/internal.ts"]])), [
    "base/a_test.ts face",
  ]);
  assert.deepEqual(rulesBroken(graph([["app/a.ts", "io/testing/h.ts"]])), ["app/a.ts test-code"]);
  assert.deepEqual(rulesBroken(graph([["io/b.ts", "io/b_test.ts"]])), ["io/b.ts test-code"]);
  assert.ok(isTestCode("x/y_bench.ts") && isTestCode("tests/e2e.ts") && isTestCode("bench/t.ts"));
  assert.ok(!isTestCode("x/testnet.ts"));
});

Deno.test("a pure room imports only its packages and names no clock, randomness or I/O", () => {
  assert.deepEqual(rulesBroken(graph([["base/a.ts", "npm:smol-toml"]])), []);
  assert.deepEqual(rulesBroken(graph([["base/a.ts", "node:fs"]])), ["base/a.ts pure"]);
  assert.deepEqual(rulesBroken(graph([["io/b.ts", "node:fs"]])), [], "io/ is not pure");
  const text = [
    "// Date.now() in a comment is fine",
    'const s = "Deno.readFile in a string is fine";',
    "const re = /console\\./;",
    "export const t = () => Date.now();",
    "export const m = `${Math.random()}`;",
  ].join("\n");
  const broken = checkRooms(graph([], { "base/a.ts": text }), rooms);
  assert.deepEqual(broken.map((v) => [v.line, v.found]), [[4, "Date.now"], [5, "Math.random"]]);
  assert.deepEqual(rulesBroken(graph([], { "base/a_test.ts": "Date.now()" })), [], "tests may");
});

Deno.test("codeOnly blanks comments, strings and regexps, and keeps template expressions", () => {
  const text = 'a /* x */ "y" // z\nb = /q"/; `t ${c} u`';
  const code = codeOnly(text);
  assert.equal(code.length, text.length);
  assert.equal(code.split("\n").length, 2);
  assert.match(code, /^a {9}" "/);
  assert.ok(!/[xyzqtu]/.test(code.replace(/[abc]/g, "")), code);
  assert.ok(code.includes("${c}"));
});

Deno.test("the rules themselves: rooms named must exist, and uses form no circle", () => {
  assert.deepEqual(ruleProblems(rooms), []);
  const circle: Room[] = [
    { path: "a/", job: "", uses: ["b/"] },
    { path: "b/", job: "", uses: ["c/"] },
    { path: "c/", job: "", uses: ["a/"] },
  ];
  assert.deepEqual(ruleProblems(circle).map((v) => v.message), [
    "the rooms' uses form a circle: a/ -> b/ -> c/ -> a/",
  ]);
  assert.deepEqual(
    ruleProblems([{ path: "a/", job: "", uses: ["nowhere/"] }]).map((v) => v.message),
    [
      'a/ uses "nowhere/", which is no room',
    ],
  );
});

Deno.test("the project's rooms name only rooms and form no circle", () => {
  assert.deepEqual(ruleProblems(ROOMS), []);
});

Deno.test("a violation prints as file:line, the import, what the rule says, and the rule", () => {
  const [v] = checkRooms(graph([["io/b.ts", "app/mod.ts"]]), rooms);
  assert.equal(
    formatViolation(v),
    "io/b.ts:1 imports app/mod.ts: io/ may not use app/ (it uses base/) [rule: uses]",
  );
});
