import assert from "node:assert/strict";
import {
  CoordinatorProgramError,
  PROGRAM_ERROR_CODES,
  programErrorName,
  programErrorNumber,
} from "./errors.ts";
import { COORDINATOR_ERROR_CODES } from "../../core/mod.ts";

Deno.test("program errors: 6000 + CoordinatorError number, 6100 + program error number", () => {
  assert.equal(programErrorNumber("Halted"), 6000);
  assert.equal(programErrorNumber("CannotResume"), 6009);
  assert.equal(programErrorNumber("InvalidInstruction"), 6100);
  for (const name of [...COORDINATOR_ERROR_CODES, ...PROGRAM_ERROR_CODES]) {
    assert.equal(programErrorName(programErrorNumber(name)), name);
  }
  assert.equal(programErrorName(6050), undefined);
  assert.equal(programErrorName(1.5), undefined);
  assert.equal(new CoordinatorProgramError("ClientsFull", "x").code, 6109);
});

Deno.test("program errors: the C enums list the same names in the same order", async () => {
  const header = await Deno.readTextFile(new URL("../program/layout.h", import.meta.url));
  const enumAfter = (first: string): string[] => {
    const start = header.indexOf(`${first} =`);
    const body = header.slice(start, header.indexOf("}", start));
    return body.split(",").map((s) => s.trim().split(/\s/)[0]).filter((s) => s.startsWith("E_"));
  };
  const cName = (name: string) => "E_" + name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();
  assert.deepEqual(enumAfter("E_HALTED"), COORDINATOR_ERROR_CODES.map(cName));
  assert.deepEqual(enumAfter("E_INVALID_INSTRUCTION"), PROGRAM_ERROR_CODES.map(cName));
});
