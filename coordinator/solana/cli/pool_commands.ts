/**
 * Runs the mining pool's operator commands (parsed by pool_args.ts): each builds the pool's
 * instruction (coordinator/solana/pool/) and sends it with {@linkcode TransactionSender}; a
 * refusal comes back as a {@linkcode ProgramCommandError} naming the pool's error and its log line.
 *
 * @module
 */
import type { Address, Instruction } from "@solana/kit";
import { UsageError } from "../../../common/mod.ts";
import {
  decodeLenderAccount,
  decodePoolAccount,
  type LenderAccount,
  lenderAddress,
  lenderClaimInstruction,
  lenderCreateInstruction,
  lenderDepositInstruction,
  lenderOwed,
  type PoolAccount,
  poolAddress,
  poolClaimableInstruction,
  poolCreateInstruction,
  poolErrorName,
  poolExtractInstruction,
  poolUpdateInstruction,
} from "../pool/mod.ts";
import { loadWallet, SolanaRpcClient, TransactionSender } from "../rpc/mod.ts";
import { namedProgramError } from "./program_error.ts";
import type { PoolArgs } from "./pool_args.ts";

/** A pool account as JSON (bigints as decimal strings). */
function poolJson(at: Address, p: PoolAccount): Record<string, unknown> {
  return {
    address: at,
    authority: p.authority,
    index: p.index.toString(),
    frozen: p.frozen,
    collateralMint: p.collateralMint,
    collateralVault: p.collateralVault,
    rewardsMint: p.rewardsMint,
    rewardsVault: p.rewardsVault,
    maxDeposit: p.maxDeposit.toString(),
    totalDeposited: p.totalDeposited.toString(),
    totalExtracted: p.totalExtracted.toString(),
    totalClaimable: p.totalClaimable.toString(),
    totalClaimed: p.totalClaimed.toString(),
    lenders: p.lenders.toString(),
  };
}

function lenderJson(at: Address, pool: PoolAccount, l: LenderAccount): Record<string, unknown> {
  const owed = pool.totalDeposited === 0n
    ? 0n
    : lenderOwed(l.deposited, pool.totalClaimable, pool.totalDeposited);
  return {
    address: at,
    user: l.user,
    deposited: l.deposited.toString(),
    claimed: l.claimed.toString(),
    claimableNow: (owed > l.claimed ? owed - l.claimed : 0n).toString(),
  };
}

/** Runs one parsed pool command. Throws the underlying error (typed) when it fails. */
export async function runPoolCommand(
  args: PoolArgs,
  io: { write(line: string): void },
): Promise<void> {
  const o = args.pool;
  const programId = o.poolProgramId;
  const rpc = new SolanaRpcClient({ url: o.rpc });
  const wallet = o.walletPath === null ? null : await loadWallet(o.walletPath);
  const signer = () => {
    if (wallet === null) {
      throw new UsageError(`${args.command} needs --wallet-private-key-path FILE`);
    }
    return wallet.signer;
  };
  const sender = wallet === null
    ? null
    : new TransactionSender({ rpcs: [rpc], payer: wallet.signer });
  const send = async (instructions: Instruction[]): Promise<void> => {
    try {
      await sender!.send(instructions);
    } catch (e) {
      throw namedProgramError(e, "pool", poolErrorName);
    }
  };
  const where = async (): Promise<Address> => {
    if (o.pool !== null) return o.pool;
    const authority = o.poolAuthority ?? wallet?.signer.address;
    if (authority === undefined) {
      throw new UsageError(
        `${args.command} needs --pool, --pool-authority or --wallet-private-key-path to find the pool`,
      );
    }
    return await poolAddress(programId, { authority, index: o.index });
  };
  const readPool = async (at: Address): Promise<PoolAccount> => {
    const data = await rpc.accountData(at);
    if (data === null) throw new Error(`no pool at ${at}`);
    return decodePoolAccount(data);
  };

  switch (args.command) {
    case "pool-create": {
      const { pool, instruction } = await poolCreateInstruction({
        programId,
        authority: signer(),
        index: o.index,
        maxDeposit: args.maxDeposit,
        collateralMint: args.collateralMint,
        rewardsMint: args.rewardsMint,
      });
      await send([instruction]);
      const p = await readPool(pool);
      io.write(
        `created pool ${o.index} at ${pool}: collateral vault ${p.collateralVault}, rewards ` +
          `vault ${p.rewardsVault}`,
      );
      return;
    }
    case "pool-update": {
      const pool = await where();
      await send([
        poolUpdateInstruction({
          programId,
          pool,
          authority: signer(),
          maxDeposit: args.maxDeposit ?? undefined,
          frozen: args.frozen ?? undefined,
        }),
      ]);
      const p = await readPool(pool);
      io.write(
        `pool ${pool}: deposits ${p.frozen ? "frozen" : "open"}, cap ${p.maxDeposit}, ` +
          `${p.totalDeposited} deposited`,
      );
      return;
    }
    case "pool-extract": {
      const pool = await where();
      await send([
        await poolExtractInstruction({
          programId,
          pool,
          authority: signer(),
          destination: args.to,
          amount: args.amount,
        }),
      ]);
      io.write(`extracted ${args.amount} from pool ${pool} to ${args.to}`);
      return;
    }
    case "pool-claimable": {
      const pool = await where();
      await send([
        await poolClaimableInstruction({
          programId,
          pool,
          authority: signer(),
          totalClaimable: args.total,
        }),
      ]);
      io.write(`pool ${pool}: lenders may claim ${args.total} in all`);
      return;
    }
    case "pool-deposit": {
      const pool = await where();
      const user = signer();
      const lender = await lenderAddress(programId, { pool, user: user.address });
      const instructions: Instruction[] = [];
      if (await rpc.accountData(lender) === null) {
        instructions.push((await lenderCreateInstruction({ programId, pool, user })).instruction);
      }
      instructions.push(
        await lenderDepositInstruction({
          programId,
          pool,
          user,
          source: args.from,
          amount: args.amount,
        }),
      );
      await send(instructions);
      const l = decodeLenderAccount((await rpc.accountData(lender))!);
      io.write(
        `deposited ${args.amount} into pool ${pool}; ${l.deposited} in all from this wallet`,
      );
      return;
    }
    case "pool-claim": {
      const pool = await where();
      const user = signer();
      await send([await lenderClaimInstruction({ programId, pool, user, destination: args.to })]);
      const lender = await lenderAddress(programId, { pool, user: user.address });
      const l = decodeLenderAccount((await rpc.accountData(lender))!);
      io.write(
        `claimed from pool ${pool} into ${args.to}; ${l.claimed} paid to this wallet in all`,
      );
      return;
    }
    case "json-dump-pool": {
      const pool = await where();
      const p = await readPool(pool);
      const out: Record<string, unknown> = { pool: poolJson(pool, p) };
      if (args.lender !== null) {
        const at = await lenderAddress(programId, { pool, user: args.lender });
        const data = await rpc.accountData(at);
        out.lender = data === null ? null : lenderJson(at, p, decodeLenderAccount(data));
      }
      io.write(JSON.stringify(out, null, 2));
      return;
    }
    default: {
      const unreachable: never = args;
      throw new Error(`unknown pool command ${JSON.stringify(unreachable)}`);
    }
  }
}
