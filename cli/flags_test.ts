import assert from "node:assert/strict";
import { envName, helpText, parseFlags, suggest, unknownCommand } from "./flags.ts";
import { UsageError } from "../common/mod.ts";

const SPEC = {
  usage: "deno task demo --state FILE [options]",
  summary: "Runs the demo.",
  flags: {
    state: { type: "string", value: "FILE", description: "the run config", required: true },
    "server-port": {
      type: "string",
      value: "P",
      short: "s",
      description: "TCP port",
      defaultText: "any free port",
    },
    logs: { type: "string", value: "FORMAT", description: "log format", default: "console" },
    "bootstrap-peer": { type: "string", multiple: true, value: "ADDR", description: "a peer" },
    "no-bulk": { type: "boolean", description: "no bulk path" },
  },
} as const;

Deno.test("parseFlags: long, =value, short, repeated, boolean, defaults", () => {
  const p = parseFlags(SPEC, [
    "--state",
    "a.toml",
    "-s",
    "9",
    "--bootstrap-peer=x",
    "--bootstrap-peer",
    "y",
    "--no-bulk",
  ]);
  assert.deepEqual(p.values, {
    state: "a.toml",
    "server-port": "9",
    "bootstrap-peer": ["x", "y"],
    "no-bulk": true,
    logs: "console",
  });
  assert.equal(p.help, false);
  assert.equal(parseFlags(SPEC, ["-s7"]).values["server-port"], "7");
  assert.equal(parseFlags(SPEC, ["-h"]).help, true);
  assert.equal(parseFlags(SPEC, ["--help"]).help, true);
});

Deno.test("parseFlags: an unknown flag suggests the one meant", () => {
  assert.throws(
    () => parseFlags(SPEC, ["--server-prot", "1"]),
    (e: Error) =>
      e instanceof UsageError &&
      e.message === "unknown flag --server-prot (did you mean --server-port?)",
  );
  assert.throws(() => parseFlags(SPEC, ["--stat", "x"]), /did you mean --state\?/);
  assert.throws(
    () => parseFlags(SPEC, ["--zzzzzzzz"]),
    /unknown flag --zzzzzzzz \(run with --help/,
  );
  assert.throws(() => parseFlags(SPEC, ["-q"]), /unknown flag -q/);
});

Deno.test("parseFlags: missing values, values on booleans, stray positionals are refused", () => {
  assert.throws(() => parseFlags(SPEC, ["--state"]), /--state needs a value \(FILE\)/);
  assert.throws(
    () => parseFlags(SPEC, ["--state", "--logs", "json"]),
    /--state needs a value \(FILE\), found the flag --logs/,
  );
  assert.throws(() => parseFlags(SPEC, ["--no-bulk=1"]), /--no-bulk takes no value/);
  assert.throws(() => parseFlags(SPEC, ["extra"]), /unexpected argument "extra"/);
  // A negative number is a value, not a flag.
  assert.equal(parseFlags(SPEC, ["--state", "-1"]).values.state, "-1");
});

Deno.test("parseFlags: the environment fills flags not given; the command line wins", () => {
  const env = {
    PSYCHE_STATE: "env.toml",
    PSYCHE_SERVER_PORT: "5",
    PSYCHE_BOOTSTRAP_PEER: "a, b,",
    PSYCHE_NO_BULK: "yes",
    PSYCHE_LOGS: "json",
  };
  const p = parseFlags(SPEC, ["--server-port", "6"], { env });
  assert.deepEqual(p.values, {
    state: "env.toml",
    "server-port": "6",
    "bootstrap-peer": ["a", "b"],
    "no-bulk": true,
    logs: "json",
  });
  assert.deepEqual([...p.fromEnv.keys()].sort(), ["bootstrap-peer", "logs", "no-bulk", "state"]);
  assert.equal(parseFlags(SPEC, [], { env: { PSYCHE_NO_BULK: "0" } }).values["no-bulk"], false);
  assert.throws(
    () => parseFlags(SPEC, [], { env: { PSYCHE_NO_BULK: "maybe" } }),
    /PSYCHE_NO_BULK must be 1, true, yes, 0, false or no, found "maybe"/,
  );
  // A lookup function works as well as an object, and a help flag has no variable.
  assert.equal(
    parseFlags(SPEC, [], { env: (n) => n === "PSYCHE_HELP" ? "1" : undefined }).help,
    false,
  );
  assert.equal(envName("bind-p2p-port"), "PSYCHE_BIND_P2P_PORT");
});

Deno.test("helpText: usage, every flag with its description, default and variable", () => {
  const text = helpText(SPEC);
  assert.match(text, /^Usage: deno task demo --state FILE \[options\]\n\nRuns the demo\./);
  assert.match(text, /\n {6}--state FILE +the run config \[required; env: PSYCHE_STATE\]\n/);
  assert.match(
    text,
    /\n {2}-s, --server-port P +TCP port \[default: any free port; env: PSYCHE_SERVER_PORT\]\n/,
  );
  assert.match(text, /--logs FORMAT +log format \[default: console; env: PSYCHE_LOGS\]/);
  assert.match(
    text,
    /--bootstrap-peer ADDR \.\.\. +a peer \[repeatable; env: PSYCHE_BOOTSTRAP_PEER\]/,
  );
  assert.match(text, /\n {2}-h, --help +show this help\n/);
  for (const line of text.split("\n")) assert.ok(line.length <= 100, line);
});

Deno.test("suggest and unknownCommand: the closest name, or none when nothing is close", () => {
  assert.equal(suggest("trian", ["train", "show-identity"]), "train");
  assert.equal(suggest("show", ["train", "show-identity"]), "show-identity");
  assert.equal(suggest("xyzzy", ["train", "show-identity"]), null);
  assert.equal(
    unknownCommand("trian", ["train"]).message,
    'unknown command "trian" (did you mean train?)',
  );
  assert.match(unknownCommand("zzz", ["train", "run"]).message, /expected one of train, run/);
});
