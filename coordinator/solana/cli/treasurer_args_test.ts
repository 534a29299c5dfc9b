import assert from "node:assert/strict";
import { isTreasurerArgs, parseSolanaArgs, SOLANA_COMMANDS, USAGE } from "./args.ts";
import { helpText } from "../../../cli/entry.ts";
import { UsageError } from "../../../common/mod.ts";
import { DEFAULT_PROGRAM_ID, DEFAULT_RPC_URL, DEFAULT_TREASURER_PROGRAM_ID } from "../rpc/mod.ts";

const W = ["--wallet-private-key-path", "w.json"];
const KEY = "11111111111111111111111111111111";
const U64_MAX = (1n << 64n) - 1n;

function treasurer(argv: string[]) {
  const args = parseSolanaArgs(argv);
  assert.ok(isTreasurerArgs(args), `${argv[0]} is a treasurer command`);
  return args;
}

Deno.test("treasurer commands parse into typed options with the defaults", () => {
  const create = treasurer(["treasury-create", "--run-id", "r", "--mint", KEY, ...W]);
  assert.deepEqual(create.treasurer, {
    rpc: DEFAULT_RPC_URL,
    walletPath: "w.json",
    programId: DEFAULT_PROGRAM_ID,
    treasurerProgramId: DEFAULT_TREASURER_PROGRAM_ID,
    run: { runId: "r", mainAuthority: null },
  });
  assert.ok(create.command === "treasury-create" && create.mint === KEY);
  assert.equal(create.common.rpc, DEFAULT_RPC_URL);
  const topUp = treasurer([
    "treasury-top-up",
    "--coordinator",
    KEY,
    "--amount",
    U64_MAX.toString(),
    "--from",
    KEY,
    ...W,
  ]);
  assert.ok(topUp.command === "treasury-top-up" && topUp.amount === U64_MAX);
  assert.deepEqual(topUp.treasurer.run, { coordinator: KEY });
  const claim = treasurer([
    "treasury-claim",
    "--run-id",
    "r",
    "--main-authority",
    KEY,
    "--to",
    KEY,
    "--treasurer-program-id",
    KEY,
    ...W,
  ]);
  assert.ok(claim.command === "treasury-claim" && claim.to === KEY);
  assert.deepEqual(claim.treasurer.run, { runId: "r", mainAuthority: KEY });
  assert.equal(claim.treasurer.treasurerProgramId, KEY);
  const dump = treasurer(["json-dump-treasury", "--coordinator", KEY, "--participant", KEY]);
  assert.ok(dump.command === "json-dump-treasury" && dump.participant === KEY);
  assert.equal(dump.treasurer.walletPath, null, "reading needs no wallet");
});

Deno.test("treasurer commands refuse bad command lines, naming the flag", () => {
  const cases: [string[], RegExp][] = [
    [["treasury-create", "--run-id", "r", ...W], /treasury-create needs --mint/],
    [["treasury-create", "--mint", KEY, ...W], /needs --run-id ID or --coordinator ADDRESS/],
    [["treasury-create", "--run-id", "r", "--mint", "xyz", ...W], /--mint must be a base58/],
    [
      ["treasury-create", "--run-id", "r", "--coordinator", KEY, "--mint", KEY, ...W],
      /leave out --run-id and --main-authority/,
    ],
    [["treasury-claim", "--run-id", "r", "--to", KEY], /needs --wallet-private-key-path/],
    [
      ["treasury-top-up", "--run-id", "r", "--amount", "0", "--from", KEY, ...W],
      /--amount must be a whole number in 1\.\.2\^64 - 1/,
    ],
    [
      ["treasury-top-up", "--run-id", "r", "--amount", "18446744073709551616", "--from", KEY, ...W],
      /--amount must be a whole number/,
    ],
    [["treasury-top-up", "--run-id", "r", "--amount", "5", ...W], /needs --from/],
    [["treasury-claim", "--run-id", "x".repeat(33), "--to", KEY, ...W], /33 bytes, at most 32/],
    [["treasury-claim", "--run-id", "r", "--to", KEY, "--index", "1", ...W], /takes no --index/],
    [["treasury-claim", "--run-id", "r", "--to", KEY, "extra", ...W], /unexpected argument/],
    [
      ["treasury-claim", "--run-id", "r", "--to", KEY, "--rpc", "nope", ...W],
      /--rpc must be a URL/,
    ],
    [["pool-claim", "--to", KEY, "--mint", KEY, ...W], /pool-claim takes no --mint/],
    [["tick", "--run-id", "r", "--participant", KEY, ...W], /tick takes no --participant/],
  ];
  for (const [argv, message] of cases) {
    assert.throws(() => parseSolanaArgs(argv), (e: unknown) => {
      assert.ok(e instanceof UsageError, `${argv.join(" ")}: ${e}`);
      assert.match(e.message, message, argv.join(" "));
      return true;
    });
  }
});

Deno.test("treasurer commands are in the help, each with its own flags", () => {
  for (
    const name of ["treasury-create", "treasury-top-up", "treasury-claim", "json-dump-treasury"]
  ) {
    assert.match(USAGE, new RegExp(`\\n  ${name} `));
    const help = helpText(SOLANA_COMMANDS[name].spec);
    assert.match(help, /--treasurer-program-id/);
    assert.match(help, /--run-id/);
    assert.doesNotMatch(help, /--pool-program-id|--index/);
  }
  assert.match(helpText(SOLANA_COMMANDS["treasury-create"].spec), /--mint PUBKEY/);
});
