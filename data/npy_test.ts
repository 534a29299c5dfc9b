import assert from "node:assert/strict";
import { DataError } from "./errors.ts";
import { npyHeaderLength, parseNpyHeader } from "./npy.ts";
import { npyBytes } from "./testing/fixtures.ts";

function withDict(dict: string, version = 1): Uint8Array {
  const pre = version === 1 ? 10 : 12;
  const bytes = new Uint8Array(pre + dict.length);
  bytes.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, version, 0]);
  const view = new DataView(bytes.buffer);
  if (version === 1) view.setUint16(8, dict.length, true);
  else view.setUint32(8, dict.length, true);
  bytes.set(new TextEncoder().encode(dict), pre);
  return bytes;
}

Deno.test("parseNpyHeader reads 1-D u2/u4/i4 headers of versions 1 and 2", () => {
  const v1 = npyBytes([1, 2, 3], "<u2");
  const h1 = parseNpyHeader(v1, "a.npy");
  assert.deepEqual(h1, { dataOffset: v1.length - 6, dtype: "u16", length: 3 });
  assert.equal(h1.dataOffset % 64, 0);
  const v2 = withDict("{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }\n", 2);
  assert.deepEqual(parseNpyHeader(v2, "b.npy"), { dataOffset: v2.length, dtype: "i32", length: 5 });
  const dq = withDict('{"shape": (7,), "descr": "<u4", "fortran_order": False}\n');
  assert.equal(parseNpyHeader(dq, "c.npy").dtype, "u32");
});

Deno.test("parseNpyHeader rejects non-token arrays naming the file and what it found", () => {
  const cases: Array<[string, RegExp]> = [
    ["{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", /dtype '<f4' is not a token/],
    ["{'descr': '>u2', 'fortran_order': False, 'shape': (3,), }", /dtype '>u2'/],
    ["{'descr': '<u2', 'fortran_order': True, 'shape': (3,), }", /Fortran order/],
    ["{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }", /shape \(3, 4\) is not 1-D/],
    ["{'descr': '<u2', 'fortran_order': False, 'shape': (), }", /shape \(\) is not 1-D/],
    ["{'descr': '<u2', 'fortran_order': False }", /no valid 'shape'/],
  ];
  for (const [dict, pattern] of cases) {
    assert.throws(() => parseNpyHeader(withDict(dict), "bad.npy"), (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.equal(e.file, "bad.npy");
      assert.match(e.message, pattern);
      return true;
    });
  }
});

Deno.test("npy preamble errors: bad magic, version, oversize and short header", () => {
  const good = npyBytes([1], "<u2");
  const badMagic = good.slice();
  badMagic[3] = 0;
  assert.throws(() => npyHeaderLength(badMagic, "x.npy"), /bad magic at byte offset 3/);
  const badVersion = good.slice();
  badVersion[6] = 9;
  assert.throws(() => npyHeaderLength(badVersion, "x.npy"), /unsupported .npy version 9/);
  const huge = withDict("{}", 2);
  new DataView(huge.buffer).setUint32(8, 1 << 30, true);
  assert.throws(() => npyHeaderLength(huge, "x.npy"), /exceeds 65536/);
  assert.throws(() => parseNpyHeader(good.subarray(0, 20), "x.npy"), /only 20 are available/);
  assert.throws(() => npyHeaderLength(good.subarray(0, 5), "x.npy"), /too short/);
});
