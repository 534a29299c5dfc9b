/**
 * The mining pool's operator commands (`deno task solana pool-create`, `pool-update`,
 * `pool-extract`, `pool-claimable`, `pool-deposit`, `pool-claim`, `json-dump-pool`): their flags
 * and the check that turns parsed flags into one typed command. args.ts lists them with the
 * run commands; pool_commands.ts runs them.
 *
 * @module
 */
import type { Address } from "@solana/kit";
import { UsageError } from "../../../common/mod.ts";
import { DEFAULT_POOL_PROGRAM_ID, DEFAULT_RPC_URL } from "../rpc/mod.ts";
import {
  type CommandEntry,
  commandFamily,
  pubkeyFlag as pubkey,
  rpcUrlFlag,
  stringFlag as str,
} from "./command_flags.ts";

const U64_MAX = (1n << 64n) - 1n;

/** Flags every pool command takes. */
const POOL_COMMON_FLAGS = {
  rpc: str("URL", "JSON-RPC endpoint", { default: DEFAULT_RPC_URL }),
  "wallet-private-key-path": str(
    "FILE",
    "keypair JSON (64 numbers, as solana-keygen writes); signs and pays (every command but " +
      "json-dump-pool)",
  ),
  "pool-program-id": str("PUBKEY", "mining pool program", { default: DEFAULT_POOL_PROGRAM_ID }),
} as const;

/** Where the pool is: its address, or its authority and index. */
const POOL_FLAGS = {
  pool: str("ADDRESS", "the pool's address (instead of deriving it)"),
  "pool-authority": str(
    "PUBKEY",
    "who created the pool; with --index it gives the pool's address",
    { defaultText: "the wallet" },
  ),
  index: str("N", "the authority's number for the pool (u64)", { defaultText: "0" }),
} as const;

/** Every pool flag, to type the parsed values with (args.ts adds them to its table). */
export const POOL_FLAG_TYPES = {
  ...POOL_COMMON_FLAGS,
  ...POOL_FLAGS,
  "collateral-mint": str("", ""),
  "rewards-mint": str("", ""),
  "max-deposit": str("", ""),
  freeze: { type: "boolean", description: "" },
  unfreeze: { type: "boolean", description: "" },
  amount: str("", ""),
  total: str("", ""),
  from: str("", ""),
  to: str("", ""),
  lender: str("", ""),
} as const;

const poolCommand = commandFamily({ ...POOL_FLAGS, ...POOL_COMMON_FLAGS });

const WHERE = "[--pool ADDRESS | --pool-authority PUBKEY --index N]";

/** The pool commands, by name: summary and flags (with the common ones). */
export const POOL_COMMANDS: Readonly<Record<string, CommandEntry>> = {
  "pool-create": poolCommand(
    "pool-create",
    "create a mining pool (and its two token vaults) owned by the wallet",
    "--index N --collateral-mint PUBKEY --rewards-mint PUBKEY [--max-deposit N] [options]",
    {
      "collateral-mint": str("PUBKEY", "the SPL Token mint lenders deposit", { required: true }),
      "rewards-mint": str("PUBKEY", "the SPL Token mint lenders are paid in", { required: true }),
      "max-deposit": str("N", "the cap on all deposits together", { defaultText: "2^64 - 1" }),
    },
  ),
  "pool-update": poolCommand(
    "pool-update",
    "change a pool's deposit cap, or freeze or reopen its deposits",
    `${WHERE} [--max-deposit N] [--freeze | --unfreeze] [options]`,
    {
      "max-deposit": str("N", "the new cap on all deposits together"),
      freeze: { type: "boolean", description: "refuse deposits from now on" },
      unfreeze: {
        type: "boolean",
        description: "accept deposits again (only until rewards are claimable)",
      },
    },
  ),
  "pool-extract": poolCommand(
    "pool-extract",
    "move collateral out of a pool's vault into a token account (the authority)",
    `${WHERE} --amount N --to TOKEN_ACCOUNT [options]`,
    {
      amount: str("N", "how many base units", { required: true }),
      to: str("TOKEN_ACCOUNT", "a token account of the collateral mint", { required: true }),
    },
  ),
  "pool-claimable": poolCommand(
    "pool-claimable",
    "declare the rewards a frozen pool's lenders may claim in all (held in its vault)",
    `${WHERE} --total N [options]`,
    { total: str("N", "base units of the rewards mint, in all (only grows)", { required: true }) },
  ),
  "pool-deposit": poolCommand(
    "pool-deposit",
    "deposit collateral into a pool (the first time, creating the lender account)",
    `${WHERE} --amount N --from TOKEN_ACCOUNT [options]`,
    {
      amount: str("N", "how many base units", { required: true }),
      from: str("TOKEN_ACCOUNT", "the wallet's token account of the collateral mint", {
        required: true,
      }),
    },
  ),
  "pool-claim": poolCommand(
    "pool-claim",
    "claim the wallet's share of a pool's rewards that it was not yet paid",
    `${WHERE} --to TOKEN_ACCOUNT [options]`,
    { to: str("TOKEN_ACCOUNT", "a token account of the rewards mint", { required: true }) },
  ),
  "json-dump-pool": poolCommand(
    "json-dump-pool",
    "print a pool's account (and a lender's) as JSON",
    `${WHERE} [--lender PUBKEY] [options]`,
    { lender: str("PUBKEY", "also print this user's lender account") },
  ),
};

/** Options every pool command shares. */
export interface PoolCommonArgs {
  rpc: string;
  walletPath: string | null;
  poolProgramId: Address;
  /** --pool, or null to derive it from the authority (default the wallet) and index. */
  pool: Address | null;
  poolAuthority: Address | null;
  index: bigint;
}

/** One pool command. */
export type PoolCommand =
  | {
    command: "pool-create";
    collateralMint: Address;
    rewardsMint: Address;
    maxDeposit: bigint;
  }
  | { command: "pool-update"; maxDeposit: bigint | null; frozen: boolean | null }
  | { command: "pool-extract"; amount: bigint; to: Address }
  | { command: "pool-claimable"; total: bigint }
  | { command: "pool-deposit"; amount: bigint; from: Address }
  | { command: "pool-claim"; to: Address }
  | { command: "json-dump-pool"; lender: Address | null };

/** A parsed pool command line. */
export type PoolArgs = PoolCommand & { pool: PoolCommonArgs };

type Values = {
  [K in keyof typeof POOL_FLAG_TYPES]?: (typeof POOL_FLAG_TYPES)[K] extends { type: "boolean" }
    ? boolean
    : string;
};

/** A whole number in [0, 2^64 - 1] (`positive`: at least 1). */
function units(flag: string, text: string, positive = false): bigint {
  if (!/^\d{1,20}$/.test(text) || BigInt(text) > U64_MAX) {
    throw new UsageError(`--${flag} must be a whole number of at most 2^64 - 1, found "${text}"`);
  }
  const n = BigInt(text);
  if (positive && n === 0n) throw new UsageError(`--${flag} must be at least 1, found 0`);
  return n;
}

/** Turns a pool command's parsed flags into its typed command (a UsageError names the flag). */
export function checkPoolArgs(
  command: string,
  values: Values,
  positionals: readonly string[],
): PoolArgs {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const pool: PoolCommonArgs = {
    rpc: values.rpc ?? DEFAULT_RPC_URL,
    walletPath: values["wallet-private-key-path"] ?? null,
    poolProgramId: values["pool-program-id"] === undefined
      ? DEFAULT_POOL_PROGRAM_ID
      : pubkey("pool-program-id", values["pool-program-id"]),
    pool: values.pool === undefined ? null : pubkey("pool", values.pool),
    poolAuthority: values["pool-authority"] === undefined
      ? null
      : pubkey("pool-authority", values["pool-authority"]),
    index: values.index === undefined ? 0n : units("index", values.index),
  };
  rpcUrlFlag(pool.rpc);
  if (
    pool.pool !== null && (values["pool-authority"] !== undefined || values.index !== undefined)
  ) {
    throw new UsageError("--pool names the pool: leave out --pool-authority and --index");
  }
  if (command !== "json-dump-pool" && pool.walletPath === null) {
    throw new UsageError(`${command} needs --wallet-private-key-path FILE`);
  }
  const required = (
    flag: "collateral-mint" | "rewards-mint" | "amount" | "total" | "from" | "to",
  ) => {
    const text = values[flag];
    if (text === undefined) throw new UsageError(`${command} needs --${flag}`);
    return text;
  };
  switch (command) {
    case "pool-create":
      if (pool.pool !== null || pool.poolAuthority !== null) {
        throw new UsageError(
          "pool-create makes the wallet's pool: leave out --pool and --pool-authority",
        );
      }
      return {
        command,
        collateralMint: pubkey("collateral-mint", required("collateral-mint")),
        rewardsMint: pubkey("rewards-mint", required("rewards-mint")),
        maxDeposit: values["max-deposit"] === undefined
          ? U64_MAX
          : units("max-deposit", values["max-deposit"]),
        pool,
      };
    case "pool-update": {
      if (values.freeze && values.unfreeze) {
        throw new UsageError("pool-update takes --freeze or --unfreeze, not both");
      }
      const maxDeposit = values["max-deposit"] === undefined
        ? null
        : units("max-deposit", values["max-deposit"]);
      const frozen = values.freeze ? true : values.unfreeze ? false : null;
      if (maxDeposit === null && frozen === null) {
        throw new UsageError("pool-update needs --max-deposit N, --freeze or --unfreeze");
      }
      return { command, maxDeposit, frozen, pool };
    }
    case "pool-extract":
      return {
        command,
        amount: units("amount", required("amount"), true),
        to: pubkey("to", required("to")),
        pool,
      };
    case "pool-claimable":
      return { command, total: units("total", required("total")), pool };
    case "pool-deposit":
      return {
        command,
        amount: units("amount", required("amount"), true),
        from: pubkey("from", required("from")),
        pool,
      };
    case "pool-claim":
      return { command, to: pubkey("to", required("to")), pool };
    case "json-dump-pool":
      return {
        command,
        lender: values.lender === undefined ? null : pubkey("lender", values.lender),
        pool,
      };
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}
