/**
 * The allowlist of a permissioned TCP run (`coordinator run --authorized-keys FILE`), like
 * the join authorizer of the Solana path: only the listed client keys may connect.
 *
 * The file lists one ed25519 public key per line, as 64 hex digits or in base58 (Solana's
 * spelling, 32 to 44 characters); `#` starts a comment, blank lines are skipped:
 *
 * ```text
 * # lab cluster
 * 3f1c9a02d1e4b5c6a798011223344556677889900aabbccddeeff00112233445
 * 9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin   # alice
 * ```
 *
 * Parsing is pure; the CLI reads the file.
 *
 * @module
 */
import { toHex } from "../../common/mod.ts";

/** A line of an authorized-keys file that is not a key, with the file and line number. */
export class AuthorizedKeysError extends Error {
  /** Always `"AuthorizedKeysError"`. */
  override name = "AuthorizedKeysError";
}

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const BASE58_DIGIT = new Map([...BASE58].map((c, i) => [c, i]));

/** Bytes of `text` in base58 (Bitcoin's alphabet, leading `1`s are zero bytes), or null. */
export function decodeBase58(text: string): Uint8Array | null {
  let value = 0n;
  for (const c of text) {
    const digit = BASE58_DIGIT.get(c);
    if (digit === undefined) return null;
    value = value * 58n + BigInt(digit);
  }
  const body: number[] = [];
  while (value > 0n) {
    body.push(Number(value & 0xffn));
    value >>= 8n;
  }
  let zeros = 0;
  while (zeros < text.length && text[zeros] === "1") zeros++;
  return Uint8Array.from([...new Array(zeros).fill(0), ...body.reverse()]);
}

/** A 32-byte key written as 64 hex digits or in base58, or null if it is neither. */
export function parsePublicKey(text: string): Uint8Array | null {
  if (/^[0-9a-fA-F]{64}$/.test(text)) {
    return Uint8Array.from(text.match(/../g)!.map((h) => parseInt(h, 16)));
  }
  if (text.length < 32 || text.length > 44) return null;
  const bytes = decodeBase58(text);
  return bytes !== null && bytes.length === 32 ? bytes : null;
}

/**
 * The keys listed in an authorized-keys file's `text`, as hex ({@linkcode toHex}).
 * Throws {@linkcode AuthorizedKeysError} naming `path` and the line of the first entry that
 * is not a key, or when the file lists no key at all (a run nobody could join).
 *
 * @example
 * ```ts
 * import { parseAuthorizedKeys } from "./authorized_keys.ts";
 * const keys = parseAuthorizedKeys("# one key\n" + "ab".repeat(32) + "  # bob\n", "keys.txt");
 * if (!keys.has("ab".repeat(32))) throw new Error("the key is listed");
 * ```
 */
export function parseAuthorizedKeys(text: string, path: string): Set<string> {
  const keys = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const entry = lines[i].replace(/#.*/, "").trim();
    if (entry === "") continue;
    const key = parsePublicKey(entry);
    if (key === null) {
      throw new AuthorizedKeysError(
        `${path}, line ${i + 1}: "${entry}" is not a public key ` +
          "(expected 64 hex digits or a base58 key of 32 bytes)",
      );
    }
    keys.add(toHex(key));
  }
  if (keys.size === 0) {
    throw new AuthorizedKeysError(`${path} lists no keys: nobody could join the run`);
  }
  return keys;
}
