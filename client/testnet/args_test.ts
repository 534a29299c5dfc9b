import assert from "node:assert/strict";
import { parseTestnetArgs } from "./args.ts";
import { UsageError } from "../../common/mod.ts";

const base = ["--num-clients", "3", "--config-path", "cfg"];

Deno.test("testnet arguments: defaults and every option", () => {
  assert.deepEqual(parseTestnetArgs(base), {
    numClients: 3,
    configPath: "cfg",
    randomKillNum: 0,
    randomKillIntervalS: 120,
    logs: "console",
    stopAfterEpochs: null,
    stopAfterSeconds: null,
    checkpointDir: null,
    keepTemp: false,
    calibrate: false,
    dashboardPort: null,
  });
  assert.deepEqual(
    parseTestnetArgs([
      ...base,
      "--random-kill-num",
      "2",
      "--random-kill-interval",
      "30",
      "--logs",
      "json",
      "--stop-after-epochs",
      "4",
      "--stop-after-seconds",
      "60",
      "--checkpoint-dir",
      "out",
      "--keep-temp",
      "--calibrate",
      "--dashboard-port",
      "20003",
    ]),
    {
      numClients: 3,
      configPath: "cfg",
      randomKillNum: 2,
      randomKillIntervalS: 30,
      logs: "json",
      stopAfterEpochs: 4,
      stopAfterSeconds: 60,
      checkpointDir: "out",
      keepTemp: true,
      calibrate: true,
      dashboardPort: 20003,
    },
  );
  assert.equal(parseTestnetArgs(["-h"]), null);
  assert.equal(parseTestnetArgs([...base, "--num-clients", "5"])?.numClients, 5, "last wins");
});

Deno.test("testnet arguments: mistakes name the flag", () => {
  const cases: [string[], RegExp][] = [
    [["--config-path", "cfg"], /--num-clients N is required/],
    [["--num-clients", "2"], /--config-path DIR is required/],
    [
      ["--num-clients", "0", "--config-path", "c"],
      /--num-clients must be a whole number in 1..64, found "0"/,
    ],
    [["--num-clients", "2x", "--config-path", "c"], /found "2x"/],
    [[...base, "--logs", "tui"], /--logs must be one of console, json, found "tui"/],
    [[...base, "--random-kill-interval", "5"], /needs --random-kill-num/],
    [[...base, "--bogus"], /bogus/],
    [[...base, "extra"], /extra/],
  ];
  for (const [args, message] of cases) {
    assert.throws(() => parseTestnetArgs(args), (e) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, message);
      return true;
    });
  }
});

Deno.test("testnet arguments: PSYCHE_* variables fill flags; a flag wins; a bad one is named", () => {
  const env = { PSYCHE_NUM_CLIENTS: "2", PSYCHE_CONFIG_PATH: "cfg", PSYCHE_KEEP_TEMP: "yes" };
  const a = parseTestnetArgs([], env);
  assert.equal(a?.numClients, 2);
  assert.equal(a?.configPath, "cfg");
  assert.equal(a?.keepTemp, true);
  assert.equal(parseTestnetArgs(["--num-clients", "5"], env)?.numClients, 5);
  assert.throws(
    () => parseTestnetArgs([], { ...env, PSYCHE_NUM_CLIENTS: "99" }),
    /--num-clients must be a whole number in 1..64, found "99" \(PSYCHE_NUM_CLIENTS is set/,
  );
});
