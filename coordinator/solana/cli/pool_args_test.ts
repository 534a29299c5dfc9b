import assert from "node:assert/strict";
import { isPoolArgs, parseSolanaArgs, SOLANA_COMMANDS, USAGE } from "./args.ts";
import { helpText } from "../../../cli/entry.ts";
import { UsageError } from "../../../common/mod.ts";
import { DEFAULT_POOL_PROGRAM_ID, DEFAULT_RPC_URL } from "../rpc/mod.ts";

const W = ["--wallet-private-key-path", "w.json"];
const KEY = "11111111111111111111111111111111";
const U64_MAX = (1n << 64n) - 1n;

function pool(argv: string[]) {
  const args = parseSolanaArgs(argv);
  assert.ok(isPoolArgs(args), `${argv[0]} is a pool command`);
  return args;
}

Deno.test("pool commands parse into typed options with the defaults", () => {
  const create = pool([
    "pool-create",
    "--collateral-mint",
    KEY,
    "--rewards-mint",
    KEY,
    "--index",
    "3",
    ...W,
  ]);
  assert.deepEqual(create.pool, {
    rpc: DEFAULT_RPC_URL,
    walletPath: "w.json",
    poolProgramId: DEFAULT_POOL_PROGRAM_ID,
    pool: null,
    poolAuthority: null,
    index: 3n,
  });
  assert.ok(create.command === "pool-create");
  assert.equal(create.maxDeposit, U64_MAX);
  const update = pool(["pool-update", "--freeze", "--pool", KEY, ...W]);
  assert.ok(update.command === "pool-update");
  assert.deepEqual([update.frozen, update.maxDeposit, update.pool.pool], [true, null, KEY]);
  const cap = pool(["pool-update", "--max-deposit", "18446744073709551615", ...W]);
  assert.ok(cap.command === "pool-update" && cap.maxDeposit === U64_MAX && cap.frozen === null);
  const deposit = pool(["pool-deposit", "--amount", "5", "--from", KEY, ...W]);
  assert.ok(deposit.command === "pool-deposit" && deposit.amount === 5n);
  const claim = pool(["pool-claim", "--to", KEY, "--pool-authority", KEY, "--index", "1", ...W]);
  assert.ok(claim.command === "pool-claim" && claim.pool.poolAuthority === KEY);
  const claimable = pool(["pool-claimable", "--total", "0", ...W]);
  assert.ok(claimable.command === "pool-claimable" && claimable.total === 0n);
  const extract = pool(["pool-extract", "--amount", "1", "--to", KEY, ...W]);
  assert.ok(extract.command === "pool-extract" && extract.to === KEY);
  const dump = pool(["json-dump-pool", "--pool", KEY, "--lender", KEY]);
  assert.ok(dump.command === "json-dump-pool" && dump.lender === KEY);
  assert.equal(dump.pool.walletPath, null, "reading needs no wallet");
});

Deno.test("pool commands refuse bad command lines, naming the flag", () => {
  const cases: [string[], RegExp][] = [
    [["pool-create", "--rewards-mint", KEY, ...W], /pool-create needs --collateral-mint/],
    [
      ["pool-create", "--collateral-mint", "xyz", "--rewards-mint", KEY, ...W],
      /--collateral-mint must be a base58/,
    ],
    [
      ["pool-create", "--collateral-mint", KEY, "--rewards-mint", KEY, "--pool", KEY, ...W],
      /leave out --pool/,
    ],
    [["pool-deposit", "--amount", "5", "--from", KEY], /needs --wallet-private-key-path/],
    [["pool-deposit", "--amount", "0", "--from", KEY, ...W], /--amount must be at least 1/],
    [["pool-deposit", "--amount", "-1", "--from", KEY, ...W], /--amount must be a whole number/],
    [
      ["pool-deposit", "--amount", "18446744073709551616", "--from", KEY, ...W],
      /at most 2\^64 - 1/,
    ],
    [["pool-deposit", "--amount", "1.5", "--from", KEY, ...W], /--amount must be a whole number/],
    [["pool-update", ...W], /needs --max-deposit N, --freeze or --unfreeze/],
    [["pool-update", "--freeze", "--unfreeze", ...W], /not both/],
    [
      ["pool-claim", "--to", KEY, "--pool", KEY, "--index", "2", ...W],
      /leave out --pool-authority and --index/,
    ],
    [["pool-claim", "--to", KEY, "--amount", "5", ...W], /pool-claim takes no --amount/],
    [["pool-claim", "--to", KEY, "--run-id", "r", ...W], /pool-claim takes no --run-id/],
    [["pool-claim", "--to", KEY, "extra", ...W], /unexpected argument "extra"/],
    [["pool-claimable", ...W], /pool-claimable needs --total/],
    [["pool-claim", "--to", KEY, "--rpc", "not a url", ...W], /--rpc must be a URL/],
  ];
  for (const [argv, message] of cases) {
    assert.throws(() => parseSolanaArgs(argv), (e: unknown) => {
      assert.ok(e instanceof UsageError, `${argv.join(" ")}: ${e}`);
      assert.match(e.message, message, argv.join(" "));
      return true;
    });
  }
});

Deno.test("pool commands are in the help, each with its own flags", () => {
  for (
    const name of ["pool-create", "pool-deposit", "pool-claim", "pool-claimable", "json-dump-pool"]
  ) {
    assert.match(USAGE, new RegExp(`\\n  ${name} `));
    const help = helpText(SOLANA_COMMANDS[name].spec);
    assert.match(help, /--pool-program-id/);
    assert.doesNotMatch(help, /--run-id|--main-authority/);
  }
  assert.match(helpText(SOLANA_COMMANDS["pool-create"].spec), /--collateral-mint PUBKEY/);
  const help = parseSolanaArgs(["pool-claim", "--help"]);
  assert.deepEqual([help.command, help.command === "help" && help.topic], ["help", "pool-claim"]);
});
