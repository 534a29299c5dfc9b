import assert from "node:assert/strict";
import { formatTiling, parseAttentionTiling, parseTiling } from "./tiling_arg.ts";
import { CPU_PROFILE, GPU_PROFILE, vec4Tiling } from "./profile.ts";

Deno.test("tilings round-trip through their command-line text", () => {
  assert.deepEqual(parseTiling(formatTiling(GPU_PROFILE.matmul)), GPU_PROFILE.matmul);
  assert.deepEqual(parseTiling(formatTiling(CPU_PROFILE.matmul)), CPU_PROFILE.matmul);
  assert.deepEqual(parseTiling("8,8,16,16,8"), {
    strategy: "tiled",
    rows: 8,
    cols: 8,
    workgroup: [16, 16],
    depth: 8,
  });
  const vec4 = parseTiling("8,8,16,16,8,vec4");
  assert.equal(vec4.strategy, "tiled-vec4");
  assert.equal(formatTiling(vec4), "8,8,16,16,8,vec4");
  assert.equal(vec4.buffers, undefined);
  const double = parseTiling("8,8,16,16,8,vec4,db");
  assert.deepEqual(double, { ...vec4, buffers: 2 });
  assert.equal(formatTiling(double), "8,8,16,16,8,vec4,db");
  // One buffer written out is the same tiling as none.
  assert.equal(formatTiling({ ...vec4, buffers: 1 }), "8,8,16,16,8,vec4");
  const bads = ["", "4,4,16,16", "4,4,16,16,x", "4,4,-1,16,16", "4,4,16,16,1.5", "8,8,8,8,0,vec4"];
  const flags = ["8,8,16,16,8,v4", "8,8,16,16,8,vec4,1", "8,8,16,16,8,db", "8,8,16,16,8,db,vec4"];
  for (const bad of [...bads, ...flags, "8,8,16,16,8,vec4,db,db", "8,8,8,8,0,vec4,db"]) {
    assert.throws(() => parseTiling(bad), /expected rows,cols,wx,wy,depth/, bad);
  }
});

Deno.test("tiled-vec4 variant flags parse in any order and are written in one", () => {
  const plain = parseTiling("8,8,16,16,8,vec4");
  assert.deepEqual(parseTiling("8,8,16,16,8,vec4,u"), { ...plain, unrollK: true });
  assert.deepEqual(parseTiling("8,8,16,16,8,vec4,g4"), { ...plain, vec4Loads: true });
  const kr = vec4Tiling(8, 8, [16, 16], 8, 1, { unrollK: true, kRows: true });
  assert.deepEqual(parseTiling("8,8,16,16,8,vec4,kr,u"), kr);
  assert.equal(formatTiling(kr), "8,8,16,16,8,vec4,u,kr");
  const all = vec4Tiling(8, 8, [16, 16], 8, 2, { unrollK: true, vec4Loads: true });
  for (const order of ["db,u,g4", "g4,u,db", "u,db,g4"]) {
    assert.deepEqual(parseTiling(`8,8,16,16,8,vec4,${order}`), all, order);
  }
  assert.equal(formatTiling(all), "8,8,16,16,8,vec4,db,u,g4");
  assert.equal(
    formatTiling(vec4Tiling(4, 4, [16, 16], 16, 1, { vec4Loads: true })),
    "4,4,16,16,16,vec4,g4",
  );
  // Off flags leave no field, so a plain tiling compares (and keys its pipelines) as before.
  assert.deepEqual(vec4Tiling(8, 8, [16, 16], 8, 1, { unrollK: false }), plain);
  const cases: [string, RegExp][] = [
    ["8,8,16,16,8,vec4,u,u", /flag "u" twice/],
    ["8,8,16,16,8,vec4,g8", /unknown flag "g8"/],
    ["8,8,16,16,8,vec4,U", /unknown flag "U"/],
    ["8,8,16,16,8,u", /"u" where "vec4" or nothing was expected/],
    ["8,8,16,16,8,g4,vec4", /"g4" where "vec4" or nothing was expected/],
    ["8,8,16,16,8,vec4,", /unknown flag ""/],
    ["8,8,16,16,0,vec4,u", /vec4 needs depth > 0/],
  ];
  for (const [bad, why] of cases) {
    assert.throws(() => parseTiling(bad), why, bad);
    assert.throws(() => parseTiling(bad), /expected rows,cols,wx,wy,depth/, bad);
  }
});

Deno.test("attention tilings parse from their command-line text", () => {
  assert.deepEqual(parseAttentionTiling("rows"), CPU_PROFILE.attention);
  // The GPU profile's tiles without its head-size bound: `tiled` runs every D.
  assert.deepEqual(parseAttentionTiling("tiled"), { strategy: "tiled", rows: 64, staged: 64 });
  const { maxHeadDim: _, ...tiles } = GPU_PROFILE.attention;
  assert.deepEqual(parseAttentionTiling("tiled"), tiles);
  assert.deepEqual(parseAttentionTiling("32x16"), {
    strategy: "tiled",
    rows: 32,
    staged: 16,
    queries: 1,
  });
  assert.equal(parseAttentionTiling("64x64x4").queries, 4);
  assert.deepEqual(parseAttentionTiling("64x64x4,ra"), {
    ...parseAttentionTiling("64x64x4"),
    rowArrays: true,
  });
  assert.deepEqual(parseAttentionTiling("tiled,ra"), { ...tiles, rowArrays: true });
  const bads = ["", "row", "64", "64x", "64x64x4x1", "0x64", "64x-1", "64x1.5", "64,64"];
  for (const bad of [...bads, "64x64,kr", "64x64,ra,ra", "rows,ra"]) {
    assert.throws(() => parseAttentionTiling(bad), /expected rows, tiled or ROWSxSTAGED/, bad);
  }
});
