/**
 * Runs the treasurer's commands (parsed by treasurer_args.ts): each builds the treasurer's
 * instruction (coordinator/solana/treasurer/), or the SPL transfer of a top-up, and sends it with
 * {@linkcode TransactionSender}; a refusal comes back as a {@linkcode ProgramCommandError}
 * naming the treasurer's error and its log line.
 *
 * @module
 */
import { type Address, getAddressEncoder, type Instruction } from "@solana/kit";
import { UsageError } from "../../../common/mod.ts";
import { type CoordinatorAccount, coordinatorAddress } from "../abi/mod.ts";
import {
  decodeParticipantAccount,
  decodeTreasuryAccount,
  participantAddress,
  participantClaimInstruction,
  participantCreateInstruction,
  tokenTransferInstruction,
  treasurerErrorName,
  type TreasuryAccount,
  treasuryAddress,
  treasuryCreateInstruction,
} from "../treasurer/mod.ts";
import { loadWallet, SolanaRpcClient, TransactionSender } from "../rpc/mod.ts";
import { namedProgramError } from "./program_error.ts";
import { readRun } from "./operator.ts";
import type { TreasurerArgs } from "./treasurer_args.ts";

/** The points the run's account says `user` earned, or null when it has no registration. */
function earnedPoints(run: CoordinatorAccount, user: Address): bigint | null {
  const key = getAddressEncoder().encode(user);
  const reg = run.registry.find((r) => r.signer.every((b, i) => b === key[i]));
  return reg?.earned ?? null;
}

/** The amount a token account's data holds (SPL Token layout: a u64 at byte 64). */
function tokenAmount(data: Uint8Array): bigint {
  return new DataView(data.buffer, data.byteOffset, data.length).getBigUint64(64, true);
}

function treasuryJson(at: Address, t: TreasuryAccount, vaultAmount: bigint) {
  return {
    address: at,
    coordinatorProgram: t.coordinatorProgram,
    coordinator: t.coordinator,
    mint: t.mint,
    vault: t.vault,
    vaultAmount: vaultAmount.toString(),
    authority: t.authority,
    totalClaimed: t.totalClaimed.toString(),
    participants: t.participants.toString(),
  };
}

/** Runs one parsed treasurer command. Throws the underlying error (typed) when it fails. */
export async function runTreasurerCommand(
  args: TreasurerArgs,
  io: { write(line: string): void },
): Promise<void> {
  const o = args.treasurer;
  const programId = o.treasurerProgramId;
  const rpc = new SolanaRpcClient({ url: o.rpc });
  const wallet = o.walletPath === null ? null : await loadWallet(o.walletPath);
  const signer = () => {
    if (wallet === null) {
      throw new UsageError(`${args.command} needs --wallet-private-key-path FILE`);
    }
    return wallet.signer;
  };
  const send = async (instructions: Instruction[]): Promise<void> => {
    const sender = new TransactionSender({ rpcs: [rpc], payer: signer() });
    try {
      await sender.send(instructions);
    } catch (e) {
      throw namedProgramError(e, "treasurer", treasurerErrorName);
    }
  };
  const run = async (): Promise<Address> => {
    if ("coordinator" in o.run) return o.run.coordinator;
    const main = o.run.mainAuthority ?? wallet?.signer.address;
    if (main === undefined) {
      throw new UsageError(
        `${args.command} needs --coordinator, --main-authority or --wallet-private-key-path ` +
          "to find the run",
      );
    }
    return await coordinatorAddress({
      mainAuthority: main,
      runId: o.run.runId,
      programId: o.programId,
    });
  };
  const readTreasury = async (coordinator: Address) => {
    const at = await treasuryAddress(programId, coordinator);
    const data = await rpc.accountData(at);
    if (data === null) throw new Error(`the run ${coordinator} has no treasury (none at ${at})`);
    return { at, treasury: decodeTreasuryAccount(data) };
  };
  const vaultAmount = async (t: TreasuryAccount) => {
    const data = await rpc.accountData(t.vault);
    if (data === null) throw new Error(`no vault at ${t.vault}`);
    return tokenAmount(data);
  };

  switch (args.command) {
    case "treasury-create": {
      const coordinator = await run();
      const { treasury, vault, instruction } = await treasuryCreateInstruction({
        programId,
        authority: signer(),
        coordinatorProgram: o.programId,
        coordinator,
        mint: args.mint,
      });
      await send([instruction]);
      io.write(
        `created treasury ${treasury} for run ${coordinator}: vault ${vault}, mint ${args.mint}`,
      );
      return;
    }
    case "treasury-top-up": {
      const { at, treasury } = await readTreasury(await run());
      await send([
        tokenTransferInstruction({
          source: args.from,
          destination: treasury.vault,
          owner: signer(),
          amount: args.amount,
        }),
      ]);
      io.write(
        `topped up treasury ${at} with ${args.amount}; its vault holds ${await vaultAmount(
          treasury,
        )}`,
      );
      return;
    }
    case "treasury-claim": {
      const coordinator = await run();
      const { at } = await readTreasury(coordinator);
      const user = signer();
      const participant = await participantAddress(programId, { treasury: at, user: user.address });
      const before = await rpc.accountData(participant);
      const instructions: Instruction[] = [];
      if (before === null) {
        instructions.push(
          (await participantCreateInstruction({ programId, treasury: at, user })).instruction,
        );
      }
      instructions.push(
        await participantClaimInstruction({
          programId,
          treasury: at,
          coordinator,
          user,
          destination: args.to,
        }),
      );
      await send(instructions);
      const was = before === null ? 0n : decodeParticipantAccount(before).claimed;
      const now = decodeParticipantAccount((await rpc.accountData(participant))!).claimed;
      io.write(
        `claimed ${now - was} from treasury ${at} into ${args.to}; ${now} points paid to this ` +
          "wallet in all",
      );
      return;
    }
    case "json-dump-treasury": {
      const coordinator = await run();
      const { at, treasury } = await readTreasury(coordinator);
      const out: Record<string, unknown> = {
        treasury: treasuryJson(at, treasury, await vaultAmount(treasury)),
      };
      if (args.participant !== null) {
        const runAccount = await readRun(rpc, coordinator);
        const earned = earnedPoints(runAccount, args.participant);
        const pAt = await participantAddress(programId, { treasury: at, user: args.participant });
        const data = await rpc.accountData(pAt);
        const claimed = data === null ? 0n : decodeParticipantAccount(data).claimed;
        out.participant = {
          address: pAt,
          user: args.participant,
          created: data !== null,
          earned: earned === null ? null : earned.toString(),
          claimed: claimed.toString(),
          claimableNow: earned === null || earned <= claimed ? "0" : (earned - claimed).toString(),
        };
      }
      io.write(JSON.stringify(out, null, 2));
      return;
    }
    default: {
      const unreachable: never = args;
      throw new Error(`unknown treasurer command ${JSON.stringify(unreachable)}`);
    }
  }
}
