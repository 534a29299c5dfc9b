import assert from "node:assert/strict";
import { witnessBloomParametersInteger } from "./bloom_integer.ts";
import { witnessBloomParameters } from "../../core/mod.ts";

Deno.test("bloom sizing: the integer formula equals bloom.ts for every cap 1..65535", () => {
  for (let n = 1; n <= 0xffff; n++) {
    const float = witnessBloomParameters(n);
    const integer = witnessBloomParametersInteger(n);
    if (float.numBits !== integer.numBits || float.numKeys !== integer.numKeys) {
      assert.fail(
        `maxClients ${n}: float ${JSON.stringify(float)}, integer ${JSON.stringify(integer)}`,
      );
    }
  }
});

Deno.test("bloom sizing: the program's constants are in program/selection.c", async () => {
  const c = await Deno.readTextFile(new URL("../program/selection.c", import.meta.url));
  assert.match(c, /#define BLOOM_C_FP 10538883138827ull/);
  assert.match(c, /#define BLOOM_LN2_FP 762123384785ull/);
  assert.throws(() => witnessBloomParametersInteger(0), RangeError);
  assert.throws(() => witnessBloomParametersInteger(65_536), RangeError);
});
