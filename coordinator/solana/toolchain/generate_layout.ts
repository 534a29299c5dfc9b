/**
 * Writes what the account layout table (abi/layout.ts) decides: the C header the program is
 * compiled with (program/layout.h) and the layout section of docs/solana-program.md, between
 * its `layout:begin` and `layout:end` markers. The account decoder needs no file: it reads the
 * table when it loads.
 *
 * `deno task layout` rewrites both files; `deno task check` (and CI) runs it with `--check`,
 * which changes nothing and exits 1 naming each file that no longer matches the table.
 *
 * @module
 */
import { denoEnv, parseOrExit } from "../../../cli/entry.ts";
import {
  ACCOUNT_MAGIC_TEXT,
  camelCase,
  ERROR_ENUMS,
  LAYOUT_CONSTANTS,
  LAYOUT_ENUMS,
  LAYOUT_STRUCTS,
  type LayoutEnum,
  type LayoutField,
  type LayoutStruct,
  type PlacedField,
  SCALAR_BYTES,
  structLayout,
} from "../abi/mod.ts";

/** Where the header lives, from the repository root. */
export const HEADER_PATH = "coordinator/solana/program/layout.h";
/** Where the docs live, from the repository root. */
export const DOCS_PATH = "docs/solana-program.md";
/** The markers around the generated part of the docs. */
export const DOCS_BEGIN =
  "<!-- layout:begin (generated from coordinator/solana/abi/layout.ts by `deno task layout`) -->";
export const DOCS_END = "<!-- layout:end -->";

const GENERATED_NOTE = [
  " * GENERATED from coordinator/solana/abi/layout.ts by `deno task layout`: edit the table",
  " * there, not this file (`deno task check` fails when the two differ).",
];

function cEnum(e: LayoutEnum): string[] {
  const lines = e.doc === undefined ? [] : [`/* ${e.doc} */`];
  lines.push("enum {");
  e.names.forEach((name, i) =>
    lines.push(i === 0 || e.numbered ? `  ${name} = ${e.first + i},` : `  ${name},`)
  );
  lines.push("};");
  return lines;
}

function cDims(field: LayoutField): string {
  return (field.dims ?? []).map((d) => `[${d}]`).join("");
}

function cStruct(struct: LayoutStruct): string[] {
  const layout = structLayout(struct.c);
  const lines = struct.comment === undefined ? [] : [`/* ${struct.comment} */`];
  lines.push("typedef struct {");
  for (const field of struct.fields) {
    if (field.comment !== undefined) lines.push(`  /* ${field.comment} */`);
    lines.push(`  ${field.type} ${field.c}${cDims(field)};`);
  }
  lines.push(`} ${struct.c};`);
  lines.push(`_Static_assert(sizeof(${struct.c}) == ${layout.size}, "${struct.c} size");`);
  for (const placed of layout.fields) {
    if (placed.field.c.startsWith("_pad")) continue;
    lines.push(
      `_Static_assert(__builtin_offsetof(${struct.c}, ${placed.field.c}) == ${placed.offset}, ` +
        `"${struct.c}.${placed.field.c}");`,
    );
  }
  return lines;
}

/** The text of program/layout.h. */
export function layoutHeader(): string {
  const magic = [...ACCOUNT_MAGIC_TEXT].map((ch) => `'${ch}'`).join(", ");
  const lines = [
    "/*",
    ` * layout.h: the coordinator account, version ${
      LAYOUT_CONSTANTS.find((c) => c.name === "ACCOUNT_VERSION")!.value
    }. A fixed layout (capacity 256 clients),`,
    " * every field naturally aligned, little-endian, no pointers; docs/solana-program.md lists",
    " * it byte by byte and coordinator/solana/abi/account.ts decodes it. The _Static_asserts pin",
    " * every offset the documentation and the decoder rely on: changing one is a new version.",
    ...GENERATED_NOTE,
    " */",
    "#ifndef PSYCHE_LAYOUT_H",
    "#define PSYCHE_LAYOUT_H",
    "",
    '#include "sol.h"',
    "",
  ];
  for (const c of LAYOUT_CONSTANTS) {
    if (c.doc !== undefined) lines.push(`/* ${c.doc} */`);
    lines.push(`#define ${c.name} ${c.literal ?? c.value}`);
  }
  for (const e of LAYOUT_ENUMS) lines.push("", ...cEnum(e));
  for (const s of LAYOUT_STRUCTS) lines.push("", ...cStruct(s));
  lines.push(
    "",
    `/* "${ACCOUNT_MAGIC_TEXT}": written by init_coordinator, checked by every other instruction. */`,
    `static const u8 ACCOUNT_MAGIC[${ACCOUNT_MAGIC_TEXT.length}] = {${magic}};`,
  );
  for (const e of ERROR_ENUMS) lines.push("", ...cEnum(e));
  lines.push("", "#endif", "");
  return lines.join("\n");
}

/** The docs' order of sections. */
const DOCS_ORDER = [
  "account_t",
  "config_t",
  "model_t",
  "metadata_t",
  "epoch_state_t",
  "round_t",
  "witness_t",
  "bloom_t",
  "client_t",
  "task_t",
  "seat_t",
  "registration_t",
  "digest_record_t",
  "digest_vote_t",
  "ejection_t",
  "meeting_address_t",
];

const thousands = (n: number) => n.toLocaleString("en-US");

/** Where `struct` sits in the account, when it sits there once. */
function absoluteBase(struct: LayoutStruct): number | null {
  if (struct.c === "account_t") return 0;
  if (struct.at === undefined) return null;
  return structLayout("account_t").offsets[camelCase(struct.at)];
}

function heading(struct: LayoutStruct): string {
  const base = absoluteBase(struct);
  const size = structLayout(struct.c).size;
  if (struct.c === "account_t") return `${struct.title} (${thousands(size)} bytes)`;
  return base === null ? `${struct.title} (${thousands(size)} bytes)` : `${struct.title} (${base})`;
}

/** GitHub's anchor of a heading. */
export function anchor(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-");
}

function link(c: string): string {
  const struct = LAYOUT_STRUCTS.find((s) => s.c === c)!;
  return `[${struct.title}](#${anchor(heading(struct))})`;
}

function typeCell(placed: PlacedField): string {
  const { field } = placed;
  const dims = (field.dims ?? []).map((d) => typeof d === "number" ? d : constantValue(d));
  if (field.type in SCALAR_BYTES) {
    return "`" + field.type + dims.map((d) => `[${d}]`).join("") + "`";
  }
  return dims.length === 0 ? link(field.type) : `${dims.join(" × ")} × ${link(field.type)}`;
}

function constantValue(name: string): number {
  return LAYOUT_CONSTANTS.find((c) => c.name === name)!.value;
}

type Row = [string, string, string, string, string];

function rows(struct: LayoutStruct, base: number, prefix: string): Row[] {
  const out: Row[] = [];
  for (const placed of structLayout(struct.c).fields) {
    const { field } = placed;
    const at = String(base + placed.offset);
    if (field.c.startsWith("_pad")) {
      out.push([at, String(placed.size), "—", "", "zero"]);
      continue;
    }
    const name = prefix + (field.label ?? camelCase(field.c));
    if (field.inline) {
      const inner = LAYOUT_STRUCTS.find((s) => s.c === field.type)!;
      out.push(...rows(inner, base + placed.offset, `${name}.`));
      continue;
    }
    out.push([at, String(placed.size), name, typeCell(placed), field.doc ?? ""]);
  }
  return out;
}

function table(rowsIn: Row[]): string[] {
  const header: Row = ["Offset", "Size", "Field", "Type", "Meaning"];
  const all = [header, ...rowsIn];
  const widths = header.map((_, i) => Math.max(3, ...all.map((r) => [...r[i]].length)));
  const line = (r: readonly string[]) =>
    "| " + r.map((cell, i) => cell + " ".repeat(widths[i] - [...cell].length)).join(" | ") + " |";
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rowsIn.map(line)];
}

/** Wraps `text` at 100 columns, as the hand-written paragraphs of the docs are. */
function wrap(text: string): string[] {
  const out: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > 100) {
      out.push(line);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  if (line !== "") out.push(line);
  return out;
}

/** The generated part of docs/solana-program.md (between the markers, markers excluded). */
export function layoutDocs(): string {
  const lines: string[] = [];
  for (const c of DOCS_ORDER) {
    const struct = LAYOUT_STRUCTS.find((s) => s.c === c)!;
    const base = absoluteBase(struct);
    lines.push("", `${"#".repeat(struct.depth ?? 3)} ${heading(struct)}`, "");
    if (struct.intro !== undefined) lines.push(...wrap(struct.intro), "");
    if (base === null) lines.push("Offsets are from the start of the structure.", "");
    lines.push(...table(rows(struct, base ?? 0, "")));
    if (struct.notes !== undefined) lines.push("", ...wrap(struct.notes));
  }
  lines.push("", "");
  return lines.join("\n");
}

/** `docs` with its generated part replaced. Throws when a marker is missing. */
export function withLayoutDocs(docs: string): string {
  const begin = docs.indexOf(DOCS_BEGIN);
  const end = docs.indexOf(DOCS_END);
  if (begin < 0 || end < begin) {
    throw new Error(`${DOCS_PATH} has no "${DOCS_BEGIN}" ... "${DOCS_END}" section`);
  }
  return docs.slice(0, begin + DOCS_BEGIN.length) + "\n" + layoutDocs() + docs.slice(end);
}

/** A generated file that differs from what the table makes. */
export interface StaleFile {
  readonly path: string;
  readonly expected: string;
}

/**
 * The generated files whose text differs from what the table makes, given the text each has now
 * (`read(path)`). Pure: the caller reads and writes.
 */
export function staleLayoutFiles(read: (path: string) => string): StaleFile[] {
  const expected: [string, string][] = [
    [HEADER_PATH, layoutHeader()],
    [DOCS_PATH, withLayoutDocs(read(DOCS_PATH))],
  ];
  return expected.filter(([path, text]) => read(path) !== text).map(([path, text]) => ({
    path,
    expected: text,
  }));
}

/** The flags of `deno task layout`. */
export const LAYOUT_SPEC = {
  usage: "deno task layout [--check]",
  summary: `Writes what the account layout table (coordinator/solana/abi/layout.ts) decides: ` +
    `${HEADER_PATH} and the layout section of ${DOCS_PATH}.`,
  flags: {
    check: {
      type: "boolean",
      description: "change nothing; exit 1 naming each file that no longer matches the table",
    },
  },
  footer: "Exit status: 0 written (or, with --check, up to date), 1 a file is stale (--check), " +
    "2 bad arguments.",
} as const;

/**
 * `--check`: 0 when every file matches, else 1 with one line per stale file. Otherwise writes.
 * `-h`/`--help` prints the help and a bad flag the usage (exit 2), before anything is written.
 */
export async function main(args: string[], root: string): Promise<number> {
  const { check } = parseOrExit(LAYOUT_SPEC, (p) => p.values, { argv: args, env: denoEnv });
  const read = (path: string) => Deno.readTextFileSync(`${root}/${path}`);
  const stale = staleLayoutFiles(read);
  if (check) {
    for (const file of stale) {
      console.error(
        `${file.path} does not match coordinator/solana/abi/layout.ts: run \`deno task layout\``,
      );
    }
    return stale.length === 0 ? 0 : 1;
  }
  for (const file of stale) {
    await Deno.writeTextFile(`${root}/${file.path}`, file.expected);
    console.log(`wrote ${file.path}`);
  }
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args, new URL("../../../", import.meta.url).pathname));
}
