/**
 * Test fixtures: small token datasets written to a temporary folder, with the tokens
 * kept in memory so tests can compute the expected sequences independently of the
 * providers. Test-only; not exported from data/mod.ts.
 *
 * @module
 */

/** A dataset on disk and the tokens each file holds. */
export interface FixtureDataset {
  dir: string;
  /** File name → tokens it holds, in sorted name order. */
  files: Array<{ name: string; tokens: number[] }>;
  /** Deletes the folder. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Little-endian bytes of `tokens` at `width` bytes each. */
export function tokenBytes(tokens: number[], width: 2 | 4): Uint8Array {
  const out = new Uint8Array(tokens.length * width);
  const view = new DataView(out.buffer);
  tokens.forEach((t, i) =>
    width === 2 ? view.setUint16(2 * i, t, true) : view.setUint32(4 * i, t, true)
  );
  return out;
}

/** A version-1.0 `.npy` file of a 1-D array. */
export function npyBytes(tokens: number[], descr: "<u2" | "<u4" | "<i4"): Uint8Array {
  let dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${tokens.length},), }`;
  const pad = 64 - ((10 + dict.length + 1) % 64);
  dict += " ".repeat(pad % 64) + "\n";
  const header = new Uint8Array(10 + dict.length);
  header.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  new DataView(header.buffer).setUint16(8, dict.length, true);
  header.set(new TextEncoder().encode(dict), 10);
  const data = tokenBytes(tokens, descr === "<u2" ? 2 : 4);
  const out = new Uint8Array(header.length + data.length);
  out.set(header);
  out.set(data, header.length);
  return out;
}

/** Distinct, recognisable tokens: file `f`, position `p`. */
export function fixtureToken(f: number, p: number, vocab = 32000): number {
  return (f * 1009 + p * 7 + 1) % vocab;
}

/**
 * Writes `counts[f]` u16 tokens into file `f` (`00f.ds`, or `.npy` when `npy` lists it)
 * and returns the folder. Names sort in file-index order.
 */
export async function writeFixtureDataset(
  counts: number[],
  options: { npy?: number[]; width?: 2 | 4 } = {},
): Promise<FixtureDataset> {
  const width = options.width ?? 2;
  const dir = await Deno.makeTempDir({ prefix: "psyche-data-" });
  const files = [];
  for (let f = 0; f < counts.length; f++) {
    const tokens = Array.from({ length: counts[f] }, (_, p) => fixtureToken(f, p));
    const isNpy = options.npy?.includes(f) ?? false;
    const name = `${String(f).padStart(3, "0")}.${isNpy ? "npy" : "ds"}`;
    const bytes = isNpy ? npyBytes(tokens, width === 2 ? "<u2" : "<u4") : tokenBytes(tokens, width);
    await Deno.writeFile(`${dir}/${name}`, bytes);
    files.push({ name, tokens });
  }
  return {
    dir,
    files,
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** The unshuffled sequences of a fixture: non-overlapping windows, partial tail dropped. */
export function expectedSequences(dataset: FixtureDataset, seqLen: number): number[][] {
  const out: number[][] = [];
  for (const f of dataset.files) {
    for (let s = 0; (s + 1) * seqLen <= f.tokens.length; s++) {
      out.push(f.tokens.slice(s * seqLen, (s + 1) * seqLen));
    }
  }
  return out;
}

/** Rows of a token batch as arrays. */
export function rows(batch: { count: number; seqLen: number; tokens: Uint32Array }): number[][] {
  return Array.from(
    { length: batch.count },
    (_, r) => Array.from(batch.tokens.subarray(r * batch.seqLen, (r + 1) * batch.seqLen)),
  );
}

/** Lets `await using` close a provider (or anything with `close()`). */
export function closing<T extends { close(): Promise<void> }>(p: T): T & AsyncDisposable {
  return Object.assign(p, { [Symbol.asyncDispose]: () => p.close() });
}
