/**
 * Builds the project's Solana programs: compiles a program's C entry file (the coordinator's
 * `program/program.c`, the mining pool's `pool/pool.c`, the treasurer's `treasurer/treasurer.c`) with clang-19 to an eBPF object
 * (`-target bpfel -mcpu=v2`, freestanding, 4 KiB stack frames) and links it with the project's
 * sBPF linker into an SBPF v0 shared object.
 *
 * `deno task build-program` writes `coordinator/solana/build/psyche_coordinator.so`
 * (`--program pool`: `psyche_mining_pool.so`; `--program treasurer`: `psyche_treasurer.so`); tests call {@linkcode buildProgram} (cheap
 * enough per test process) so they always run the current C.
 *
 * @module
 */
import { type LinkedProgram, linkSbpfV0 } from "./link.ts";
import { parseOrExit } from "../../../cli/entry.ts";
import { UsageError } from "../../../common/mod.ts";

/** The C entry file of the program. */
export const PROGRAM_SOURCE: string = new URL("../program/program.c", import.meta.url).pathname;
/** Where `deno task build-program` writes the shared object. */
export const PROGRAM_OUTPUT: string =
  new URL("../build/psyche_coordinator.so", import.meta.url).pathname;

/** The folder of the program's C sources and headers. */
export const PROGRAM_SOURCES_DIR: string = new URL("../program/", import.meta.url).pathname;

/** The mining pool's C entry file. */
export const POOL_SOURCE: string = new URL("../pool/pool.c", import.meta.url).pathname;
/** Where `deno task build-program --program pool` writes the mining pool's shared object. */
export const POOL_OUTPUT: string =
  new URL("../build/psyche_mining_pool.so", import.meta.url).pathname;

/** The treasurer's C entry file. */
export const TREASURER_SOURCE: string =
  new URL("../treasurer/treasurer.c", import.meta.url).pathname;
/** Where `deno task build-program --program treasurer` writes the treasurer's shared object. */
export const TREASURER_OUTPUT: string =
  new URL("../build/psyche_treasurer.so", import.meta.url).pathname;

/** The programs `deno task build-program` builds, by the name `--program` takes. */
export const PROGRAMS: Readonly<
  Record<"coordinator" | "pool" | "treasurer", { source: string; output: string }>
> = Object.freeze({
  coordinator: { source: PROGRAM_SOURCE, output: PROGRAM_OUTPUT },
  pool: { source: POOL_SOURCE, output: POOL_OUTPUT },
  treasurer: { source: TREASURER_SOURCE, output: TREASURER_OUTPUT },
});

/** sha256 over the names and bytes of the `.c` and `.h` files of `dir`, in name order. */
export async function sourcesHash(dir: string): Promise<string> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && /\.[ch]$/.test(e.name)) names.push(e.name);
  }
  names.sort();
  const parts: Uint8Array[] = [];
  for (const name of names) {
    const bytes = await Deno.readFile(`${dir}/${name}`);
    parts.push(new TextEncoder().encode(`${name}\0${bytes.length}\0`), bytes);
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The clang command line (without the output path). */
export const CLANG_ARGS: readonly string[] = [
  "-target",
  "bpfel",
  "-mcpu=v2",
  "-O2",
  "-std=c11",
  "-ffreestanding",
  "-fno-builtin",
  "-Wall",
  "-Wextra",
  "-Werror",
  "-mllvm",
  "-bpf-stack-size=4096",
  "-c",
];

/** clang failed or is missing. */
export class ProgramBuildError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProgramBuildError";
  }
}

/** Options of {@linkcode buildProgram}. */
export interface BuildOptions {
  /** The compiler to run (default `clang-19`, or `$CLANG` when set). */
  clang?: string;
  /** C source to compile (default {@linkcode PROGRAM_SOURCE}). */
  source?: string;
}

/** Compiles `source` to an eBPF object and returns its bytes. */
export async function compileToObject(opts: BuildOptions = {}): Promise<Uint8Array> {
  const clang = opts.clang ?? Deno.env.get("CLANG") ?? "clang-19";
  const source = opts.source ?? PROGRAM_SOURCE;
  const dir = await Deno.makeTempDir({ prefix: "psyche-sbpf-" });
  try {
    const object = `${dir}/program.o`;
    let out: Deno.CommandOutput;
    try {
      out = await new Deno.Command(clang, { args: [...CLANG_ARGS, source, "-o", object] })
        .output();
    } catch (err) {
      throw new ProgramBuildError(
        `Cannot run "${clang}" (${(err as Error).message}): install clang-19 and llvm-19 ` +
          "(apt-get install -y clang-19 llvm-19) or set CLANG",
      );
    }
    if (!out.success) {
      throw new ProgramBuildError(
        `${clang} failed on ${source}:\n${new TextDecoder().decode(out.stderr)}`,
      );
    }
    return await Deno.readFile(object);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Compiles and links the program. */
export async function buildProgram(opts: BuildOptions = {}): Promise<LinkedProgram> {
  return linkSbpfV0(await compileToObject(opts));
}

let cached: Promise<LinkedProgram> | undefined;

/** {@linkcode buildProgram} once per process (tests share the build). */
export function buildProgramOnce(): Promise<LinkedProgram> {
  cached ??= buildProgram();
  return cached;
}

let cachedPool: Promise<LinkedProgram> | undefined;

/** The mining pool program, built once per process. */
export function buildPoolOnce(): Promise<LinkedProgram> {
  cachedPool ??= buildProgram({ source: POOL_SOURCE });
  return cachedPool;
}

let cachedTreasurer: Promise<LinkedProgram> | undefined;

/** The treasurer program, built once per process. */
export function buildTreasurerOnce(): Promise<LinkedProgram> {
  cachedTreasurer ??= buildProgram({ source: TREASURER_SOURCE });
  return cachedTreasurer;
}

/** The flags of `deno task build-program`. */
export const BUILD_PROGRAM_SPEC = {
  usage:
    "deno task build-program [--program coordinator|pool|treasurer] [--clang PATH] [--out FILE]",
  summary: "Compiles a program (the coordinator's program/program.c, the mining pool's " +
    "pool/pool.c or the treasurer's treasurer/treasurer.c) with clang to an eBPF object and links it with the project's sBPF linker " +
    "into an SBPF v0 shared object.",
  flags: {
    program: {
      type: "string",
      value: "NAME",
      description: "which program: coordinator, pool or treasurer",
      defaultText: "coordinator",
    },
    clang: {
      type: "string",
      value: "PATH",
      description: "the C compiler (clang 19, with the bpfel target)",
      defaultText: "$CLANG, else clang-19",
    },
    out: {
      type: "string",
      value: "FILE",
      description: "where to write the program",
      defaultText: "coordinator/solana/build/psyche_coordinator.so (pool: psyche_mining_pool.so, " +
        "treasurer: psyche_treasurer.so)",
    },
  },
} as const;

if (import.meta.main) {
  const flags = parseOrExit(BUILD_PROGRAM_SPEC, (parsed) => {
    const name = parsed.values.program ?? "coordinator";
    if (!Object.hasOwn(PROGRAMS, name)) {
      throw new UsageError(`--program must be coordinator, pool or treasurer, found "${name}"`);
    }
    return { ...parsed.values, program: name as keyof typeof PROGRAMS };
  });
  const { source, output: defaultOutput } = PROGRAMS[flags.program];
  const output = flags.out ?? defaultOutput;
  const program = await buildProgram({ clang: flags.clang, source });
  const folder = output.slice(0, output.lastIndexOf("/") + 1);
  if (folder !== "") await Deno.mkdir(folder, { recursive: true });
  await Deno.writeFile(output, program.bytes);
  // The stamp the localnet checks before it reuses a build (localnet/ledger.ts).
  if (flags.program === "coordinator") {
    await Deno.writeTextFile(`${output}.sources`, `${await sourcesHash(PROGRAM_SOURCES_DIR)}\n`);
  }
  console.log(
    `${output}: ${program.bytes.length} bytes (.text ${program.textSize}, .rodata ` +
      `${program.rodataSize}), syscalls: ${program.syscalls.join(", ")}`,
  );
}
