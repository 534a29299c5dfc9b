/**
 * What the `deno task solana` command families (the run's, the pool's, the treasurer's) and
 * `deno task dashboard` share about flags: declaring a string flag and a command's help entry,
 * and checking a public key and the RPC URL, each refusal a UsageError naming the flag.
 *
 * @module
 */
import { type Address, address } from "@solana/kit";
import type { CommandSpec, FlagSpec } from "../../../cli/entry.ts";
import { UsageError } from "../../../common/mod.ts";

/** A string flag whose value is shown as `value` in the help. */
export function stringFlag(
  value: string,
  description: string,
  extra: Partial<FlagSpec> = {},
): FlagSpec {
  return { type: "string", value, description, ...extra };
}

/** One command: its summary for the top-level help and its spec for its own. */
export interface CommandEntry {
  readonly summary: string;
  readonly spec: CommandSpec;
}

/**
 * The entry builder of a family of commands that all take the flags `common` (after their own):
 * from a command's name, `summary` (lower case, no full stop), usage lines and own flags.
 */
export function commandFamily(common: Record<string, FlagSpec>): (
  name: string,
  summary: string,
  usage: string | string[],
  flags: Record<string, FlagSpec>,
  positionals?: CommandSpec["positionals"],
) => CommandEntry {
  return (name, summary, usage, flags, positionals) => ({
    summary,
    spec: {
      usage: (typeof usage === "string" ? [usage] : usage).map((u) =>
        `deno task solana ${name} ${u}`
      ),
      summary: summary[0].toUpperCase() + summary.slice(1) + ".",
      flags: { ...flags, ...common },
      positionals,
    },
  });
}

/** `text` as a public key; a UsageError naming `--flag` when it is not base58 of 32 bytes. */
export function pubkeyFlag(flag: string, text: string): Address {
  try {
    return address(text);
  } catch {
    throw new UsageError(`--${flag} must be a base58 public key, found "${text}"`);
  }
}

/** `rpc` itself, once it parses as a URL (a UsageError naming --rpc otherwise). */
export function rpcUrlFlag(rpc: string): string {
  try {
    new URL(rpc);
  } catch {
    throw new UsageError(`--rpc must be a URL, found "${rpc}"`);
  }
  return rpc;
}
