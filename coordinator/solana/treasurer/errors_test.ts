import assert from "node:assert/strict";
import {
  TREASURER_ERROR_BASE,
  TREASURER_ERROR_CODES,
  treasurerErrorName,
  treasurerErrorNumber,
} from "./mod.ts";

const SOURCE = await Deno.readTextFile(new URL("./treasurer.c", import.meta.url));

Deno.test("treasurer errors: the TypeScript names are treasurer.c's ERR_* enum, in order", () => {
  const fromC = [...SOURCE.matchAll(/\bERR_([A-Z_]+) = ERROR_BASE \+ (\d+),/g)].map((m) => ({
    name: m[1].toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase()),
    n: Number(m[2]),
  }));
  assert.deepEqual(fromC.map((e) => e.n), fromC.map((_, i) => i), "numbered 0, 1, 2, ...");
  assert.deepEqual(fromC.map((e) => e.name), [...TREASURER_ERROR_CODES]);
  assert.match(SOURCE, new RegExp(`#define ERROR_BASE ${TREASURER_ERROR_BASE}\\b`));
});

Deno.test("treasurer errors: names and numbers map both ways", () => {
  for (const name of TREASURER_ERROR_CODES) {
    assert.equal(treasurerErrorName(treasurerErrorNumber(name)), name);
  }
  assert.equal(treasurerErrorName(7099), undefined);
  assert.equal(treasurerErrorName(TREASURER_ERROR_BASE + TREASURER_ERROR_CODES.length), undefined);
  assert.equal(treasurerErrorName(7100.5), undefined);
  assert.throws(() => treasurerErrorNumber("Nope" as never), RangeError);
});
