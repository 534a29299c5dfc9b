import assert from "node:assert/strict";
import { POOL_ERROR_BASE, POOL_ERROR_CODES, poolErrorName, poolErrorNumber } from "./mod.ts";

const SOURCE = await Deno.readTextFile(new URL("./pool.c", import.meta.url));

Deno.test("pool errors: the TypeScript names are pool.c's E_* enum, in order", () => {
  const fromC = [...SOURCE.matchAll(/\bE_([A-Z_]+) = ERROR_BASE \+ (\d+),/g)].map((m) => ({
    name: m[1].toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase()),
    n: Number(m[2]),
  }));
  assert.deepEqual(fromC.map((e) => e.n), fromC.map((_, i) => i), "numbered 0, 1, 2, ...");
  assert.deepEqual(fromC.map((e) => e.name), [...POOL_ERROR_CODES]);
  assert.match(SOURCE, new RegExp(`#define ERROR_BASE ${POOL_ERROR_BASE}\\b`));
});

Deno.test("pool errors: names and numbers map both ways", () => {
  for (const name of POOL_ERROR_CODES) assert.equal(poolErrorName(poolErrorNumber(name)), name);
  assert.equal(poolErrorName(6999), undefined);
  assert.equal(poolErrorName(POOL_ERROR_BASE + POOL_ERROR_CODES.length), undefined);
  assert.equal(poolErrorName(7000.5), undefined);
  assert.throws(() => poolErrorNumber("Nope" as never), RangeError);
});
