import assert from "node:assert/strict";
import { bulkOptions, parseClientArgs, type TrainArgs } from "./cli.ts";
import { UsageError } from "../common/mod.ts";

Deno.test("parseClientArgs: train with defaults and every flag", () => {
  const min = parseClientArgs(["train", "--run-id", "r", "--server-addr", "h:1"]);
  assert.deepEqual(min, {
    command: "train",
    runId: "r",
    serverAddr: "h:1",
    identitySecretKeyPath: null,
    bindP2pPort: 0,
    bindP2pInterface: "0.0.0.0",
    bulkTransfer: true,
    bindBulkPort: 0,
    bindBulkInterface: null,
    bootstrapPeers: [],
    relays: [],
    microBatchSize: 1,
    recompute: false,
    checkpointDir: null,
    hubRepo: null,
    hubUrl: null,
    hubUploadAttempts: 4,
    deleteOldSteps: false,
    keepSteps: 3,
    logs: "tui",
    maxConcurrentDownloads: 8,
    model: null,
    metrics: null,
    evals: null,
  });
  const all = parseClientArgs([
    "train",
    "--run-id=r",
    "--server-addr=h:1",
    "--identity-secret-key-path=k",
    "--bind-p2p-port=4001",
    "--bind-bulk-port=4002",
    "--bind-bulk-interface=10.0.0.2",
    "--bootstrap-peer=/a",
    "--bootstrap-peer=/b",
    "--micro-batch-size=2",
    "--recompute",
    "--checkpoint-dir=c",
    "--hub-repo=owner/model-1",
    "--hub-url=http://127.0.0.1:9",
    "--hub-upload-attempts=2",
    "--delete-old-steps",
    "--keep-steps=2",
    "--logs=json",
    "--max-concurrent-downloads=3",
    "--model=m",
    "--metrics-port=9100",
    "--metrics-hostname=0.0.0.0",
    "--eval-tasks=hellaswag,arc_easy",
    "--eval-fewshot=5",
    "--eval-seed=7",
    "--eval-task-max-docs=100",
    "--eval-tasks-dir=evals",
    "--eval-tokenizer=bytes",
  ]);
  assert.equal(all.command, "train");
  if (all.command !== "train") return;
  assert.deepEqual(
    { ...all.evals, tasks: all.evals?.tasks.map((t) => t.name) },
    {
      tasks: ["hellaswag", "arc_easy"],
      fewshot: 5,
      seed: 7,
      limit: 100,
      tasksDir: "evals",
      tokenizer: "bytes",
    },
  );
  assert.deepEqual(
    [all.hubRepo, all.hubUrl, all.hubUploadAttempts, all.deleteOldSteps, all.keepSteps],
    ["owner/model-1", "http://127.0.0.1:9", 2, true, 2],
  );
  assert.equal(all.bindP2pPort, 4001);
  assert.equal(all.recompute, true);
  assert.equal(all.bulkTransfer, true);
  assert.equal(all.bindBulkPort, 4002);
  assert.equal(all.bindBulkInterface, "10.0.0.2");
  const off = parseClientArgs(["train", "--run-id=r", "--server-addr=h:1", "--no-bulk-transfer"]);
  assert.equal(off.command === "train" && off.bulkTransfer, false);
  assert.deepEqual(all.bootstrapPeers, ["/a", "/b"]);
  assert.equal(all.logs, "json");
  assert.equal(all.model, "m");
  assert.deepEqual(all.metrics, { hostname: "0.0.0.0", port: 9100 });
  const fromEnv = parseClientArgs(["train", "--run-id=r", "--server-addr=h:1"], {
    PSYCHE_METRICS_PORT: "0",
  });
  assert.deepEqual(fromEnv.command === "train" && fromEnv.metrics, {
    hostname: "127.0.0.1",
    port: 0,
  });
});

Deno.test("parseClientArgs: errors name the flag", () => {
  const bad = (args: string[], re: RegExp) =>
    assert.throws(
      () => parseClientArgs(args),
      (e) => e instanceof UsageError && re.test(e.message),
    );
  bad(["train", "--server-addr", "h:1"], /--run-id/);
  bad(["train", "--run-id", "r"], /--server-addr/);
  bad(["train", "--run-id", "r", "--server-addr", "h:1", "--logs", "xml"], /--logs must be one of/);
  bad(
    ["train", "--run-id", "r", "--server-addr", "h:1", "--micro-batch-size", "0"],
    /--micro-batch-size/,
  );
  bad(["train", "--run-id", "r", "--server-addr", "h:1", "--nope"], /nope/);
  bad(["fly"], /unknown command "fly"/);
  bad(
    ["train", "--run-id", "r", "--server-addr", "h:1", "--bind-bulk-port", "70000"],
    /--bind-bulk-port must be a whole number in 0..65535/,
  );
  bad(
    ["train", "--run-id=r", "--server-addr=h:1", "--no-bulk-transfer", "--bind-bulk-port=9"],
    /--bind-bulk-port has no effect with --no-bulk-transfer/,
  );
  bad(["show-identity", "--run-id", "r"], /show-identity takes no --run-id/);
  const hub = ["train", "--run-id=r", "--server-addr=h:1"];
  bad([...hub, "--hub-repo=o/m"], /--hub-repo needs --checkpoint-dir DIR/);
  bad([...hub, "--delete-old-steps"], /--delete-old-steps needs --checkpoint-dir DIR/);
  bad([...hub, "--checkpoint-dir=c", "--hub-repo=o"], /--hub-repo must be OWNER\/NAME, found "o"/);
  bad([...hub, "--checkpoint-dir=c", "--keep-steps=2"], /--keep-steps needs --delete-old-steps/);
  bad(
    [...hub, "--checkpoint-dir=c", "--hub-repo=o/m", "--delete-old-steps", "--keep-steps=0"],
    /--keep-steps must be at least 1 with --hub-repo/,
  );
  bad([...hub, "--hub-url=not a url"], /--hub-url must be a URL/);
  bad([...hub, "--hub-upload-attempts=2"], /--hub-upload-attempts needs --hub-repo/);
  bad(
    [...hub, "--checkpoint-dir=c", "--hub-repo=o/m", "--hub-upload-attempts=0"],
    /--hub-upload-attempts must be a whole number in 1..100/,
  );
  bad(
    ["train", "--run-id=r", "--server-addr=h:1", "--metrics-port=x"],
    /--metrics-port must be a whole number in 0..65535, found "x"/,
  );
  bad(
    ["train", "--run-id=r", "--server-addr=h:1", "--metrics-hostname=0.0.0.0"],
    /--metrics-hostname needs --metrics-port P/,
  );
  bad(
    ["train", "--run-id=r", "--server-addr=h:1", "--eval-tasks=hellaswag,winogrande"],
    /--eval-tasks: unknown task "winogrande" \(known: hellaswag/,
  );
  bad(
    ["train", "--run-id=r", "--server-addr=h:1", "--eval-fewshot=2"],
    /--eval-fewshot needs --eval-tasks LIST/,
  );
  bad(
    ["train", "--run-id=r", "--server-addr=h:1", "--eval-tasks=boolq", "--eval-tokenizer=gpt2"],
    /--eval-tokenizer must be one of llama, bytes, found "gpt2"/,
  );
  bad(
    ["train", "--run-id", "run\nid", "--server-addr", "h:1"],
    /^--run-id contains U\+000A at character 4 \(control and bidirectional/,
  );
  bad(["train", "--run-id", "a\u202Eb", "--server-addr", "h:1"], /--run-id contains U\+202E/);
  bad(["train", "--run-id", "\u2066x", "--server-addr", "h:1"], /--run-id contains U\+2066/);
  assert.deepEqual(parseClientArgs(["show-identity"]), {
    command: "show-identity",
    identitySecretKeyPath: null,
  });
  assert.deepEqual(parseClientArgs([]), { command: "help" });
});

Deno.test("parseClientArgs: --rpc chooses the Solana backend; its flags are checked", () => {
  const base = ["train", "--run-id", "r", "--rpc", "http://127.0.0.1:8899"];
  const wallet = ["--wallet-private-key-path", "w.json"];
  const args = parseClientArgs([
    ...base,
    ...wallet,
    "--main-authority",
    "K",
    "--rpc-2",
    "http://b",
  ]);
  assert.ok(args.command === "train");
  assert.equal(args.serverAddr, null);
  assert.deepEqual(args.solana, {
    rpc: "http://127.0.0.1:8899",
    wsRpc: null,
    rpc2: "http://b",
    wsRpc2: null,
    walletPrivateKeyPath: "w.json",
    mainAuthority: "K",
    coordinator: null,
    programId: null,
    claim: null,
    treasurerProgramId: null,
    depositTokenAccount: null,
  });
  const withDeposit = parseClientArgs([
    ...base,
    ...wallet,
    "--coordinator",
    "C",
    "--deposit-token-account",
    "T",
  ]);
  assert.ok(withDeposit.command === "train");
  assert.equal(withDeposit.solana?.depositTokenAccount, "T");
  const bad = (extra: string[], re: RegExp) =>
    assert.throws(
      () => parseClientArgs([...base, ...extra]),
      (e) => e instanceof UsageError && re.test(e.message),
    );
  bad(["--main-authority", "K"], /--rpc needs --wallet-private-key-path/);
  bad(wallet, /exactly one of --main-authority PUBKEY and --coordinator/);
  bad([...wallet, "--main-authority", "K", "--server-addr", "h:1"], /give one/);
  bad([...wallet, "--coordinator", "C", "--ws-rpc-2", "ws://x"], /--ws-rpc-2 needs --rpc-2/);
  bad(
    [...wallet, "--coordinator", "C", "--treasurer-program-id", "T"],
    /--treasurer-program-id needs --claim/,
  );
  const claiming = parseClientArgs([...base, ...wallet, "--coordinator", "C", "--claim", "A"]);
  assert.ok(claiming.command === "train");
  assert.deepEqual(
    [claiming.solana?.claim, claiming.solana?.treasurerProgramId],
    ["A", null],
  );
  assert.throws(
    () => parseClientArgs(["train", "--run-id", "r", "--server-addr", "h:1", "--claim", "A"]),
    /--claim needs --rpc URL/,
  );
  assert.throws(
    () =>
      parseClientArgs(["train", "--run-id", "r", "--server-addr", "h:1", "--rpc-2", "http://b"]),
    /--rpc-2 needs --rpc URL/,
  );
  assert.throws(
    () =>
      parseClientArgs([
        "train",
        "--run-id",
        "r",
        "--server-addr",
        "h:1",
        "--deposit-token-account",
        "T",
      ]),
    /--deposit-token-account needs --rpc URL/,
  );
});

Deno.test("bulkOptions: --no-bulk-transfer turns the bulk path off; the listener follows the flags", () => {
  const train = (...flags: string[]) =>
    parseClientArgs(["train", "--run-id=r", "--server-addr=h:1", ...flags]) as TrainArgs;
  assert.equal(bulkOptions(train("--no-bulk-transfer")), false);
  assert.deepEqual(bulkOptions(train()), { host: "0.0.0.0", port: 0 });
  assert.deepEqual(bulkOptions(train("--bind-p2p-interface=127.0.0.1")), {
    host: "127.0.0.1",
    port: 0,
  });
  assert.deepEqual(
    bulkOptions(train("--bind-bulk-interface=10.0.0.2", "--bind-bulk-port=4002")),
    { host: "10.0.0.2", port: 4002 },
  );
});

Deno.test("parseClientArgs: PSYCHE_* variables fill flags; a flag wins; a bad one is named", () => {
  const env = { PSYCHE_RUN_ID: "from-env", PSYCHE_SERVER_ADDR: "h:1", PSYCHE_LOGS: "json" };
  const args = parseClientArgs(["train", "--logs", "console"], env);
  assert.ok(args.command === "train");
  assert.equal(args.runId, "from-env");
  assert.equal(args.serverAddr, "h:1");
  assert.equal(args.logs, "console");
  assert.throws(
    () => parseClientArgs(["train"], { ...env, PSYCHE_MICRO_BATCH_SIZE: "0" }),
    /--micro-batch-size must be .* \(PSYCHE_MICRO_BATCH_SIZE is set in the environment\)/,
  );
  assert.deepEqual(parseClientArgs(["show-identity", "-i", "k.bin"]), {
    command: "show-identity",
    identitySecretKeyPath: "k.bin",
  });
  assert.deepEqual(parseClientArgs(["show-identity", "--help"]), {
    command: "help",
    topic: "show-identity",
  });
  assert.throws(
    () => parseClientArgs(["train", "--sever-addr", "h:1"]),
    /did you mean --server-addr\?/,
  );
});
