/**
 * The house rules: every room of the project (a top folder, or one part of coordinator/), what it
 * is for, and which rooms its product code may import. tools/check_rooms.ts holds the code to
 * these rules (`deno task check`, CI); docs/architecture.md explains them.
 *
 * The rules, in words:
 *
 * - Product code imports only the rooms its room `uses`, and the `uses` arrows form no circle.
 * - Another room is reached only through a face: its `mod.ts`, or the `mod.ts` of one of its
 *   folders (client/p2p/mod.ts). Inside a room, files import each other directly.
 * - A `pure` room does no I/O: its product code imports no other package than its `packages`,
 *   and names no clock, randomness, file, socket, console or timer (`Deno.`, `fetch(`,
 *   `Date.now`, `Math.random`, `setTimeout`, ...).
 * - Test code (`*_test.ts`, `*_bench.ts`, `testing/` folders, tests/) may look at any room, but
 *   through its face too; it may also import any `testing/` harness and tests/support/.
 *   Product code never imports test code.
 *
 * @module
 */

/** One room: a folder whose files share a job. */
export interface Room {
  /** The folder, from the repository root, ending in `/`. */
  readonly path: string;
  /** What it is for, in one line. */
  readonly job: string;
  /** Rooms whose faces its product code may import. */
  readonly uses: readonly string[];
  /** No I/O: only `packages` among outside modules, and no clock, randomness or console. */
  readonly pure?: boolean;
  /** The outside modules (npm packages, node builtins) a pure room may import, by prefix. */
  readonly packages?: readonly string[];
  /** The room's face when it is not `mod.ts` (a room of one file). */
  readonly face?: string;
}

/** Every room, lowest first. A file belongs to the room with the longest path that holds it. */
export const ROOMS: readonly Room[] = [
  {
    path: "common/",
    job: "the vocabulary every room speaks: batch ids, keys, hex, time, usage and config errors, " +
      "the TOML reader, the learning-rate schedule, bench statistics, the Prometheus text writer, " +
      "the replies worker threads owe",
    uses: [],
    pure: true,
    packages: ["npm:smol-toml"],
  },
  {
    path: "cli/",
    job: "what every command line shares: exit statuses, the io a command touches, " +
      "parse-or-print-usage",
    uses: ["common/"],
    face: "cli/entry.ts",
  },
  {
    path: "net/",
    job: "length-prefixed TCP frames, the ed25519 handshake and identities, the connection table " +
      "(server and data server)",
    uses: ["common/"],
  },
  {
    path: "net/p2p/",
    job: "the peer-to-peer layer over libp2p: the gated node, payload transfers and the bulk " +
      "path, model-sharing manifests, reachability behind NAT, the members-only circuit relay",
    uses: ["common/", "net/"],
  },
  {
    path: "shaders/",
    job: "the WebGPU runtime and WGSL kernels, each beside its TypeScript reference",
    uses: ["common/"],
  },
  {
    path: "model/",
    job:
      "the Llama model: HF config, safetensors, checkpoints and Hub folders, GPU forward/backward, " +
      "the forward with a KV cache for generation (inference/)",
    uses: ["common/", "shaders/"],
  },
  {
    path: "optimizer/",
    job: "AdamW and DisTrO: the maths, the GPU kernels, the wire format, commitments",
    uses: ["common/", "net/", "shaders/", "model/"],
  },
  {
    path: "coordinator/core/",
    job: "the pure coordinator: state machine, selection, bloom filters, Merkle roots, types",
    uses: ["common/"],
    pure: true,
    packages: ["node:crypto"],
  },
  {
    path: "coordinator/encoding/",
    job: "the binary state encoding (and its JSON form) the TCP server sends and Solana stores",
    uses: ["common/", "coordinator/core/"],
    pure: true,
  },
  {
    path: "coordinator/config/",
    job: "the run configuration (state.toml): read, validate, write, check against a data config",
    uses: ["common/", "coordinator/core/"],
    pure: true,
    packages: ["npm:smol-toml"],
  },
  {
    path: "data/",
    job: "token datasets, deterministic shuffling, data providers (local, HTTP, TCP data " +
      "server, Psyche's parquet datasets, weighted mixes)",
    uses: ["common/", "cli/", "net/", "coordinator/config/"],
  },
  {
    path: "coordinator/server/",
    job: "the TCP coordinator: wire protocol, the host around the machine, the server, saved runs",
    uses: [
      "common/",
      "cli/",
      "net/",
      "net/p2p/",
      "data/",
      "coordinator/core/",
      "coordinator/encoding/",
      "coordinator/config/",
    ],
  },
  {
    path: "coordinator/dashboard/",
    job: "the live web dashboard and Prometheus metrics of a run (TCP or Solana): a pure view " +
      "reducer, the page, its HTTP edge",
    uses: ["common/", "coordinator/core/", "coordinator/server/"],
  },
  {
    path: "coordinator/cli/",
    job: "`deno task coordinator`: validate-config (run, data and model together) and run",
    uses: [
      "common/",
      "cli/",
      "model/",
      "data/",
      "coordinator/config/",
      "coordinator/server/",
      "coordinator/dashboard/",
    ],
  },
  {
    path: "coordinator/solana/token_kit/",
    job: "what the token programs' TypeScript interfaces share (abi/, pool/, treasurer/ import " +
      "it): the SPL Token and system program addresses, account metas, account header checks",
    uses: [],
    pure: true,
    packages: ["npm:@solana/kit"],
  },
  {
    path: "coordinator/solana/abi/",
    job: "the Solana program's interface: account layout and decoder, instructions, addresses, " +
      "error codes",
    uses: [
      "common/",
      "coordinator/core/",
      "coordinator/encoding/",
      "coordinator/solana/token_kit/",
    ],
    pure: true,
    packages: ["npm:@solana/kit"],
  },
  {
    path: "coordinator/solana/reference/",
    job: "the TypeScript reference of the program, which the differential tests hold it to",
    uses: ["common/", "coordinator/core/", "coordinator/config/", "coordinator/solana/abi/"],
    pure: true,
  },
  {
    path: "coordinator/solana/program/",
    job: "the program in C, and its tests (litesvm, differential, fuzz, native replay)",
    uses: [],
  },
  {
    path: "coordinator/solana/toolchain/",
    job: "what builds the programs: the sBPF linker and lint, the build, the layout generator",
    uses: ["common/", "cli/", "coordinator/solana/abi/"],
  },
  {
    path: "coordinator/solana/pool/",
    job: "the mining pool program in C, its interface (accounts, instructions, addresses, " +
      "errors), and its tests",
    uses: ["coordinator/solana/token_kit/"],
    pure: true,
    packages: ["npm:@solana/kit"],
  },
  {
    path: "coordinator/solana/treasurer/",
    job: "the treasurer program in C (tokens for the points a run's clients earned), its " +
      "interface (accounts, instructions, addresses, errors), and its tests",
    uses: ["coordinator/solana/token_kit/"],
    pure: true,
    packages: ["npm:@solana/kit"],
  },
  {
    path: "coordinator/solana/rpc/",
    job: "RPC client, transaction sender and keypair files shared by the client and the CLI",
    uses: ["common/", "net/", "coordinator/core/", "coordinator/solana/abi/"],
  },
  {
    path: "coordinator/solana/localnet/",
    job: "`deno task localnet`: a JSON-RPC and WebSocket endpoint around litesvm",
    uses: ["common/", "cli/", "coordinator/solana/toolchain/", "coordinator/solana/rpc/"],
  },
  {
    path: "coordinator/solana/cli/",
    job: "`deno task solana`: the run operator's commands; `deno task dashboard`: a run's " +
      "live dashboard",
    uses: [
      "common/",
      "cli/",
      "net/",
      "coordinator/core/",
      "coordinator/encoding/",
      "coordinator/config/",
      "coordinator/dashboard/",
      "coordinator/solana/abi/",
      "coordinator/solana/pool/",
      "coordinator/solana/treasurer/",
      "coordinator/solana/rpc/",
    ],
  },
  {
    path: "coordinator/solana/testing/",
    job: "test harnesses of the programs: litesvm, dual runs, random sequences, native replay, " +
      "the malformed-instruction fuzz",
    uses: [],
  },
  {
    path: "train/",
    job: "the single-node trainer (`deno task train`), whose step the client reuses",
    uses: ["common/", "cli/", "shaders/", "model/", "optimizer/", "data/"],
  },
  {
    path: "eval/",
    job: "evals: multiple-choice tasks scored by log-likelihood from local task files " +
      "(`deno task eval`, the client's `--eval-tasks`)",
    uses: ["common/", "cli/", "shaders/", "model/", "data/"],
  },
  {
    path: "client/",
    job: "the networked training client: a state machine per run state, the run's gossip " +
      "(client/p2p/), a round's results (client/results/), backends, model sharing, testnet",
    uses: [
      "common/",
      "cli/",
      "net/",
      "net/p2p/",
      "shaders/",
      "model/",
      "optimizer/",
      "data/",
      "train/",
      "eval/",
      "coordinator/core/",
      "coordinator/encoding/",
      "coordinator/config/",
      "coordinator/server/",
      "coordinator/solana/abi/",
      "coordinator/solana/rpc/",
      "coordinator/solana/treasurer/",
    ],
  },
  {
    path: "generate/",
    job: "`deno task generate`: sampling text from a checkpoint with a KV cache (tokenizers, " +
      "greedy and seeded top-k/top-p sampling, the generation loop)",
    uses: ["common/", "cli/", "shaders/", "model/", "data/"],
  },
  {
    path: "bench/",
    job: "measurements across rooms: the engine against PyTorch, DisTrO's aggregate overlap",
    uses: ["common/", "cli/", "shaders/", "model/", "optimizer/", "data/", "train/"],
  },
  {
    path: "tools/",
    job: "the project's own checks: these room rules, and the script that produces the " +
      "transformers greedy expectation generation is checked against",
    uses: ["common/", "cli/"],
  },
  {
    path: "tests/",
    job: "cross-module tests: protocol simulations, attacks, end-to-end runs",
    uses: [],
  },
];
