/**
 * Defaults shared by the operator commands, the training client's Solana flags and the
 * localnet: where the coordinator, mining pool and treasurer programs live and where the local RPC listens.
 *
 * @module
 */
import { type Address, address } from "@solana/kit";

/** The coordinator program's id on the localnet (pass `--program-id` for a real deployment). */
export const DEFAULT_PROGRAM_ID: Address = address("PsyCoord11111111111111111111111111111111111");
/** The mining pool program's id on the localnet (pass `--pool-program-id` for a real deployment). */
export const DEFAULT_POOL_PROGRAM_ID: Address = address(
  "PsyPoo1111111111111111111111111111111111111",
);
/** The treasurer program's id on the localnet (pass `--treasurer-program-id` for a real one). */
export const DEFAULT_TREASURER_PROGRAM_ID: Address = address(
  "PsyTreas11111111111111111111111111111111111",
);
/** The local RPC (`deno task localnet`, or `solana-test-validator`). */
export const DEFAULT_RPC_URL = "http://127.0.0.1:8899";
