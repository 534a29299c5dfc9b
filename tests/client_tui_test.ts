/**
 * `--logs tui` on a real terminal: a coordinator process and one client process drawing its
 * screen in a tmux pane (a real pseudo-terminal, on a tmux server of the test's own socket).
 * The captured screen shows the run state and a trained step with its loss; after Ctrl-C the
 * client leaves the alternate screen, shows the cursor again and prints why it stopped. Off a
 * terminal (a pipe), `--logs tui` prints console lines after a one-line notice.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ServerProcess } from "./support/server_driver.ts";
import { tinyRunToml } from "../client/testing/testnet.ts";
import { freePort } from "../client/testnet/mod.ts";

const CLIENT = new URL("../client/main.ts", import.meta.url).pathname;
const DEADLINE_MS = 150_000;

/** Runs tmux on this test's own server (its socket file at `socket`); returns its stdout. */
async function tmux(socket: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("tmux", { args: ["-S", socket, ...args] }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`tmux ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return text;
}

/** Polls the pane until `done` accepts its text (and tmux's pane flags); names `what` on timeout. */
async function waitForPane(
  socket: string,
  what: string,
  done: (screen: string) => boolean,
): Promise<string> {
  const deadline = Date.now() + DEADLINE_MS;
  let screen = "";
  while (Date.now() < deadline) {
    screen = await tmux(socket, "capture-pane", "-p", "-t", "tui");
    if (done(screen)) return screen;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what}; the screen:\n${screen}`);
}

/** `alternate_on` and `cursor_flag` of the pane: whether the TUI holds the terminal. */
async function paneModes(socket: string): Promise<{ alternate: boolean; cursor: boolean }> {
  const flags = await tmux(
    socket,
    "display-message",
    "-p",
    "-t",
    "tui",
    "#{alternate_on} #{cursor_flag}",
  );
  const [alternate, cursor] = flags.trim().split(" ");
  return { alternate: alternate === "1", cursor: cursor === "1" };
}

const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

Deno.test({
  name: "client --logs tui draws the run in a terminal and gives the terminal back on Ctrl-C",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "psyche-tui-" });
  const socket = join(dir, "tmux.sock");
  const state = join(dir, "state.toml");
  await Deno.writeTextFile(state, tinyRunToml({ runId: "tui-run" }));
  const port = await freePort();
  const server = ServerProcess.start(["--state", state, "--server-port", String(port)]);
  try {
    const address = await server.address();
    const client = [Deno.execPath(), "run", "-A", CLIENT, "train", "--run-id", "tui-run"]
      .concat(["--server-addr", address, "--logs", "tui"]).map(quote).join(" ");
    // The shell stays after the client exits, so the pane shows what it left behind.
    await tmux(
      socket,
      "new-session",
      "-d",
      "-s",
      "tui",
      "-x",
      "100",
      "-y",
      "30",
      `${client}; echo "client exit status $?"; sleep 600`,
    );
    const trained = await waitForPane(
      socket,
      "a trained step on the TUI",
      (s) => /loss {8}\d+\.\d{4}/.test(s) && /last step {3}\d+/.test(s),
    );
    assert.match(
      trained,
      /psyche client │ run "tui-run" │ coordinator 127\.0\.0\.1:\d+ │ connected/,
    );
    assert.match(trained, /run state {3}(RoundTrain|RoundWitness|Cooldown) {2}\(1 clients\)/);
    assert.match(trained, /progress {4}epoch \d+ {2}step \d+ {2}round \d+/);
    assert.match(trained, /tokens\/s {4}[\d,]+/);
    assert.match(trained, /recent {6}[▁▂▃▄▅▆▇█]+/);
    assert.deepEqual(await paneModes(socket), { alternate: true, cursor: false });

    await tmux(socket, "send-keys", "-t", "tui", "C-c");
    const after = await waitForPane(
      socket,
      "the client to exit",
      (s) => s.includes("client exit status"),
    );
    assert.deepEqual(await paneModes(socket), { alternate: false, cursor: true });
    assert.match(after, /client stopped: Aborted; last step \d+, loss \d+\.\d{4}/);
    assert.match(after, /client exit status 0/);
    assert.doesNotMatch(after, /── Training/, "the frame went with the alternate screen");
  } finally {
    await tmux(socket, "kill-server").catch(() => {});
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("client --logs tui on a pipe prints console lines after a one-line notice", async () => {
  const port = await freePort(); // nothing listens there: the client fails to connect
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLIENT, "train", "--run-id", "r", "--server-addr", `127.0.0.1:${port}`],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  assert.equal(
    stdout.split("\n")[0],
    "--logs tui: stdout is not a terminal, printing console lines instead",
  );
  assert.ok(!stdout.includes("\x1b["), `escape codes on a pipe: ${JSON.stringify(stdout)}`);
});
