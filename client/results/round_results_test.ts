import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { identities } from "../../tests/support/coordinator_fixtures.ts";
import type { RoundAnnouncement } from "../p2p/announcement.ts";
import { type ContentHash, contentHash } from "../../net/p2p/mod.ts";
import type { ClientEventName, ClientEvents } from "../log.ts";
import { roundView } from "../round_view.ts";
import { applyPlanFor } from "../state/apply_targets.ts";
import { runInRound0 } from "../testing/fixtures.ts";
import { type ResultsTransport, RoundResults } from "./round_results.ts";
import { STRAGGLER_MIN_WAIT_MS } from "./straggler_wait.ts";
import { DEFAULT_PULL_ATTEMPTS } from "./pull_ledger.ts";
import { type PublicKeyBytes, toHex } from "../../common/mod.ts";
import {
  currentRound,
  type NodeIdentity,
  roundSelection,
  witness as coordinatorWitness,
} from "../../coordinator/core/mod.ts";
import { chunkLayouts, type DistroResult } from "../../optimizer/mod.ts";

const expectation = {
  layouts: chunkLayouts([{ name: "w", shape: [8, 8] }], { chunk: 64, topk: 2 }),
  quantize1bit: true,
};

function resultOf(step: number, batch: { start: number; end: number }, v: number): DistroResult {
  return {
    step,
    batch,
    trainerNonce: 0,
    params: [{
      indices: new Uint32Array([v % 64, (v + 1) % 64]),
      values: new Float32Array([1, -1]),
    }],
  };
}

interface Member {
  readonly key: PublicKeyBytes;
  readonly results: RoundResults;
  /** Every announcement this member sent or was delivered, by sender, kind and step. */
  readonly heard: Map<string, { from: PublicKeyBytes; message: RoundAnnouncement }>;
  readonly events: { event: ClientEventName; fields: ClientEvents[ClientEventName] }[];
}

/**
 * An in-memory network for {@link RoundResults}: gossip delivers at once to every other member
 * (unless `lose` says the copy is lost), a pull hands over what the peer heard for the step,
 * and payloads come from one shared store.
 */
class FakeNet {
  readonly members = new Map<string, Member>();
  readonly #store = new Map<ContentHash, Uint8Array>();
  /** Whether `to` loses `message` from `from` on the gossip (a pull still brings it). */
  lose: (to: PublicKeyBytes, from: PublicKeyBytes, message: RoundAnnouncement) => boolean = () =>
    false;
  /** Pulls from `peer` wait for this promise first (a slow peer), unless it is undefined. */
  pullDelay: (peer: PublicKeyBytes) => Promise<void> | undefined = () => undefined;
  /** Whether the payloads `provider` serves from now on never arrive. */
  stalls: (provider: PublicKeyBytes) => boolean = () => false;
  readonly #stalled = new Set<ContentHash>();
  #bloomKey = 1n;

  join(
    key: PublicKeyBytes,
    clock: { now?: () => number; onChange?: () => void } = {},
  ): RoundResults {
    const events: Member["events"] = [];
    const heard: Member["heard"] = new Map();
    const transport: ResultsTransport = {
      gossip: {
        publish: (message) => {
          heard.set(FakeNet.#key(key, message), { from: key, message });
          for (const member of this.members.values()) {
            if (member.key !== key && !this.lose(member.key, key, message)) {
              this.#deliver(member, key, message);
            }
          }
          return Promise.resolve(this.members.size - 1);
        },
        pull: async (peer, step) => {
          await this.pullDelay(peer);
          const holder = this.members.get(toHex(peer))!;
          const answer = [...holder.heard.values()].filter((h) => h.message.step === step);
          const self = this.members.get(toHex(key))!;
          const delivered = answer.filter((h) => this.#deliver(self, h.from, h.message)).length;
          return { received: answer.length, delivered, refused: 0 };
        },
        forgetBefore: () => {},
      },
      payloads: {
        provide: (bytes) => {
          const hash = contentHash(bytes);
          this.#store.set(hash, bytes);
          if (this.stalls(key)) this.#stalled.add(hash);
          return hash;
        },
        fetch: (hash) => {
          if (this.#stalled.has(hash)) return new Promise<never>(() => {}); // never arrives
          const bytes = this.#store.get(hash);
          return bytes === undefined
            ? Promise.reject(new Error(`nobody serves ${hash}`))
            : Promise.resolve(bytes);
        },
        budgetSpent: () => 0,
        forgetBefore: () => 0,
        clearBadProviders: () => {},
      },
    };
    const results: RoundResults = new RoundResults({
      publicKey: key,
      transport,
      logger: { log: (event, fields) => events.push({ event, fields }) },
      onChange: clock.onChange ?? (() => {}),
      randomU64: () => this.#bloomKey++ * 7919n,
      now: clock.now,
    });
    results.setExpectation(expectation);
    this.members.set(toHex(key), { key, results, heard, events });
    return results;
  }

  static #key(from: PublicKeyBytes, message: RoundAnnouncement): string {
    return `${toHex(from)}:${message.kind}:${message.step}`;
  }

  /** Delivers `message` to `to` once; false when it had it already. */
  #deliver(to: Member, from: PublicKeyBytes, message: RoundAnnouncement): boolean {
    const key = FakeNet.#key(from, message);
    if (to.heard.has(key)) return false;
    to.heard.set(key, { from, message });
    to.results.receive(from, message);
    return true;
  }
}

/**
 * A network of runInRound0's three clients where client 0 never hears client 2's result on the
 * gossip (the others do); `keys` are the clients' p2p keys in hex.
 */
function netWhere0LosesResultOf2(): { net: FakeNet; keys: string[] } {
  const net = new FakeNet();
  const keys = identities(3).map((id) => toHex(id.p2pIdentity));
  net.lose = (to, from, message) =>
    message.kind === "TrainingResult" && toHex(to) === keys[0] && toHex(from) === keys[2];
  return { net, keys };
}

async function settle(what: string, cond: () => boolean, ms = 1000): Promise<void> {
  const until = performance.now() + ms;
  while (!cond() && performance.now() < until) await new Promise((r) => setTimeout(r, 1));
  if (!cond()) throw new Error(`never settled: ${what}`);
}

/**
 * Three clients train round 0 and publish; `net.lose` decides what gossip loses. Then round 1's
 * witnesses report to the coordinator what their RoundResults verified, and the run moves to
 * round 2, where round 0's results are applied.
 */
async function roundZeroApplied(net: FakeNet): Promise<{
  clients: RoundResults[];
  ids: NodeIdentity[];
  published: DistroResult[];
  plan: NonNullable<ReturnType<typeof applyPlanFor>>;
  batches: { start: number; end: number }[];
}> {
  const { driver, ids } = runInRound0(3);
  const state = driver.state;
  const clients = ids.map((id) => net.join(id.p2pIdentity));
  for (const c of clients) c.update(structuredClone(state)); // each holds its own copy
  const view = roundView(state, 0, ids[0].signer)!;
  const published = view.assignments.map((a) => resultOf(view.step, a.batch, a.clientIndex));
  for (const [n, a] of view.assignments.entries()) {
    await clients[a.clientIndex].publishResult(
      0,
      view.selection.committeeProof(a.clientIndex),
      published[n],
    );
  }
  await settle("downloads", () => clients.every((c) => c.downloadsSettled(0)));
  driver.fullRound(); // → round 1, whose witnesses attest round 0
  for (const c of clients) c.update(structuredClone(state));
  const selection = roundSelection(state.config, currentRound(state));
  for (const index of selection.witnessIndices()) {
    const report = clients[index].witnessReport(1, selection.witnessProof(index));
    coordinatorWitness(state, ids[index], report, driver.now);
  }
  driver.witnessTimeout(); // → round 2: round 0's results are applied
  for (const c of clients) c.update(structuredClone(state));
  const plan = applyPlanFor(state, 0)!;
  const batches = view.assignments.map((a) => a.batch).sort((a, b) => a.start - b.start);
  published.sort((a, b) => a.batch.start - b.batch.start);
  return { clients, ids, published, plan, batches };
}

Deno.test("RoundResults: a result announced, judged, fetched, checked, recorded, witnessed, applied", async () => {
  const net = new FakeNet();
  const { clients, ids, published, plan, batches } = await roundZeroApplied(net);
  assert.equal(plan.quorum, 2);
  for (const c of clients) {
    const gathered = await c.gather(plan, batches);
    assert.deepEqual(gathered.results, published);
    assert.deepEqual(gathered.untrained, []);
    assert.deepEqual(gathered.missing, []);
  }
  // Nothing was refused, failed or pulled on the way.
  for (const member of net.members.values()) assert.deepEqual(member.events, []);
  assert.equal(clients[0].tracker(0)!.announcements().length, ids.length);
});

Deno.test("RoundResults: an apply lacking a result the witnesses saw pulls the round, then has it", async () => {
  const { net, keys } = netWhere0LosesResultOf2();
  const { clients, published, plan, batches } = await roundZeroApplied(net);
  assert.equal(clients[0].tracker(0)!.announcements().length, 2, "client 0 lost one");
  const gathered = await clients[0].gather(plan, batches);
  assert.deepEqual(gathered.results, published);
  assert.deepEqual(gathered.missing, []);
  const member = net.members.get(keys[0])!;
  const recovered = member.events.filter((e) => e.event === "announcements_recovered");
  assert.equal(recovered.length, 1);
  assert.equal(
    (recovered[0].fields as ClientEvents["announcements_recovered"]).why,
    "the apply lacks a result",
  );
});

Deno.test("RoundResults: a recovery returns once what was missing came, not when the slowest peer answers", async () => {
  const { net, keys } = netWhere0LosesResultOf2();
  const { clients, published, plan, batches } = await roundZeroApplied(net);
  // Client 2 (the result's trainer) answers pulls only when released; client 1 has it at once.
  const slow = Promise.withResolvers<void>();
  net.pullDelay = (peer) => toHex(peer) === keys[2] ? slow.promise : undefined;
  let gathered: Awaited<ReturnType<RoundResults["gather"]>> | undefined;
  const gathering = clients[0].gather(plan, batches).then((g) => gathered = g);
  await settle("the gather, with client 2's pull still pending", () => gathered !== undefined);
  assert.deepEqual(gathered!.results, published);
  assert.deepEqual(gathered!.missing, []);
  slow.resolve();
  await gathering;
});

Deno.test("RoundResults: when every pull of a recovery fails, the apply tries again before giving up", async () => {
  const { net, keys } = netWhere0LosesResultOf2();
  const { clients, published, plan, batches } = await roundZeroApplied(net);
  // The first pull from each peer times out (a loaded machine); later ones answer.
  const failed = new Set<string>();
  net.pullDelay = (peer) => {
    if (failed.has(toHex(peer))) return undefined;
    failed.add(toHex(peer));
    return Promise.reject(new Error("pull timed out"));
  };
  const gathered = await clients[0].gather(plan, batches);
  assert.deepEqual(gathered.missing, []);
  assert.deepEqual(gathered.results, published);
  const events = net.members.get(keys[0])!.events.map((e) => e.event);
  assert.equal(events.filter((e) => e === "pull_failed").length, 2, "both peers failed once");
  assert.ok(events.includes("announcements_recovered"));
});

Deno.test("RoundResults: a verifier's recovery of one trainer's result returns once it came", async () => {
  const { net, keys } = netWhere0LosesResultOf2();
  const { clients, ids, published } = await roundZeroApplied(net);
  assert.equal(await clients[0].resultOf(0, ids[2].signer), undefined, "lost on the gossip");
  const slow = Promise.withResolvers<void>();
  net.pullDelay = (peer) => toHex(peer) === keys[2] ? slow.promise : undefined;
  let recovered: DistroResult | undefined | null = null;
  const recovering = clients[0].recoverResultOf(0, ids[2].signer).then((r) => recovered = r);
  await settle("the recovery, with client 2's pull still pending", () => recovered !== null);
  assert.ok(recovered !== undefined, "client 1 had client 2's result");
  assert.ok(published.some((p) => isDeepStrictEqual(p, recovered)));
  slow.resolve();
  await recovering;
});

/**
 * runInRound0's three clients on `net`, each seeing round 0 at 0 ms, on a clock the test sets:
 * `publish(i, at)` and `finish(i, at)` send client i's result or Finished at `at` ms, and
 * `changes()` counts the times a client asked the state machine to look again.
 */
function round0On(net: FakeNet) {
  const { driver, ids } = runInRound0(3);
  let now = 0;
  let changes = 0;
  const clients = ids.map((id) =>
    net.join(id.p2pIdentity, { now: () => now, onChange: () => changes++ })
  );
  for (const c of clients) c.update(structuredClone(driver.state)); // round 0 seen at 0 ms
  const view = roundView(driver.state, 0, ids[0].signer)!;
  const byClient = new Map(view.assignments.map((a) => [a.clientIndex, a]));
  return {
    clients,
    view,
    peers: ids.map((id) => id.p2pIdentity),
    keys: ids.map((id) => toHex(id.p2pIdentity)),
    now: () => now,
    setNow: (ms: number) => now = ms,
    changes: () => changes,
    publish: (i: number, at: number) => {
      now = at;
      const { batch } = byClient.get(i)!;
      return clients[i].publishResult(
        0,
        view.selection.committeeProof(i),
        resultOf(view.step, batch, i),
      );
    },
    finish: (i: number, at: number) => {
      now = at;
      return clients[i].announceFinished(0, view.step, view.selection.committeeProof(i));
    },
  };
}

Deno.test("RoundResults: a witness waits for every Finished, then for stragglers only so long", async () => {
  const { clients, peers, finish, setNow, changes } = round0On(new FakeNet());
  await finish(0, 100);
  assert.equal(clients[0].witnessWaitOver(0, peers), false, "one of three: no majority");
  await finish(1, 150);
  // A majority at 150 ms: the straggler gets max(2000, 150) ms more.
  setNow(150 + STRAGGLER_MIN_WAIT_MS - 1);
  assert.equal(clients[0].witnessWaitOver(0, peers), false);
  assert.deepEqual(clients[0].unfinished(0, peers), [peers[2]]);
  setNow(150 + STRAGGLER_MIN_WAIT_MS);
  assert.equal(clients[0].witnessWaitOver(0, peers), true);
  // Before its deadline, the question sets a wake-up that asks the state machine again.
  setNow(150 + STRAGGLER_MIN_WAIT_MS - 5);
  const before = changes();
  assert.equal(clients[1].witnessWaitOver(0, peers), false);
  await settle("the straggler wake-up", () => changes() > before);
  // Everyone finished: no wait at all.
  await finish(2, 160);
  assert.equal(clients[2].witnessWaitOver(0, peers), true);
  assert.deepEqual(clients[2].unfinished(0, peers), []);
  for (const c of clients) c.close();
});

Deno.test("RoundResults: Finished waits for the last download only so long", async () => {
  const net = new FakeNet();
  const { clients, keys, publish, setNow } = round0On(net);
  const verified = (c: RoundResults) =>
    c.tracker(0)!.announcements().filter((a) => c.tracker(0)!.result(a.commitment)).length;
  await publish(0, 100);
  await publish(1, 300);
  await settle("two results at client 0", () => verified(clients[0]) === 2);
  // Client 2's bytes never arrive: its announcement does.
  net.stalls = (provider) => toHex(provider) === keys[2];
  await publish(2, 400);
  assert.equal(clients[0].downloadsSettled(0), false);
  // A majority (2 of 3) settled at 300 ms: the third gets max(minimum, 300 ms) more.
  setNow(300 + STRAGGLER_MIN_WAIT_MS - 1);
  assert.equal(clients[0].downloadsWaitOver(0), false);
  setNow(300 + STRAGGLER_MIN_WAIT_MS);
  assert.equal(clients[0].downloadsWaitOver(0), true);
  assert.equal(clients[0].downloadsSettled(0), false, "the download itself goes on");
  for (const c of clients) c.close();
});

/**
 * Three clients of round 0 where client 0 loses client 2's result on the gossip, and client 2
 * answers pulls once `answer` settles; clients 0 and 1 publish first (client 0 verifies both).
 */
async function round0With2sResultLost(answer: Promise<void>) {
  const { net, keys } = netWhere0LosesResultOf2();
  net.pullDelay = (peer) => toHex(peer) === keys[2] ? answer : undefined;
  const { clients, publish, finish, setNow, changes } = round0On(net);
  await publish(0, 100);
  await publish(1, 200);
  await settle("two results at client 0", () => clients[0].downloadsSettled(0));
  await publish(2, 300);
  // Its Finished reaches client 0 without the result: client 0 pulls from client 2.
  await finish(2, 350);
  return {
    clients,
    setNow,
    net,
    changes,
    events: () => net.members.get(keys[0])!.events.map((e) => e.event),
  };
}

Deno.test("RoundResults: a result lost on the gossip but named by its trainer's Finished holds Finished while it is pulled", async () => {
  const answer = Promise.withResolvers<void>();
  const run = await round0With2sResultLost(answer.promise);
  const [c0] = run.clients;
  assert.equal(c0.tracker(0)!.announcements().length, 2, "client 2's result was lost");
  assert.equal(c0.downloadsSettled(0), false, "its pull is under way");
  // Within the straggler wait (a majority settled at 200 ms), the pull is waited for.
  run.setNow(200 + STRAGGLER_MIN_WAIT_MS - 1);
  assert.equal(c0.downloadsWaitOver(0), false);
  answer.resolve();
  await settle("the pulled result downloaded", () => c0.downloadsSettled(0));
  assert.equal(c0.tracker(0)!.announcements().length, 3);
  assert.ok(run.events().includes("announcements_recovered"));
  for (const c of run.clients) c.close();
});

Deno.test("RoundResults: a failed pull of a result named by a Finished is retried, then holds Finished no longer", async () => {
  const first = Promise.withResolvers<void>();
  const run = await round0With2sResultLost(first.promise);
  const [c0] = run.clients;
  assert.equal(c0.downloadsSettled(0), false, "its pull is under way");
  // Every pull fails from now on (the first once released): a connection closed under each.
  let pulls = 0;
  run.net.pullDelay = () => {
    pulls++;
    return Promise.reject(new Error("Unexpected EOF - stream closed"));
  };
  const before = run.changes();
  first.reject(new Error("Unexpected EOF - stream closed"));
  await settle("the first pull's end", () => run.events().includes("pull_failed"));
  assert.ok(run.changes() > before, "the pull's end asks the state machine again");
  assert.equal(c0.downloadsSettled(0), false, "a retry is due");
  // The ledger's attempts (3, 1.5 s apart) run out; then the wait is over.
  await settle("every attempt", () => c0.downloadsSettled(0), 4000);
  assert.equal(pulls, DEFAULT_PULL_ATTEMPTS - 1, "retried until no attempt was left");
  assert.equal(c0.tracker(0)!.announcements().length, 2);
  for (const c of run.clients) c.close();
});

Deno.test("RoundResults: a retried pull of a result named by a Finished brings it", async () => {
  const first = Promise.withResolvers<void>();
  const run = await round0With2sResultLost(first.promise);
  const [c0] = run.clients;
  run.net.pullDelay = () => undefined; // the retry is answered
  first.reject(new Error("Unexpected EOF - stream closed"));
  await settle("the retried pull and its download", () => c0.downloadsSettled(0), 3000);
  assert.equal(c0.tracker(0)!.announcements().length, 3);
  assert.ok(run.events().includes("announcements_recovered"));
  for (const c of run.clients) c.close();
});

Deno.test("RoundResults: a pull that never ends holds Finished only for the straggler wait", async () => {
  const run = await round0With2sResultLost(new Promise<void>(() => {}));
  const [c0] = run.clients;
  run.setNow(200 + STRAGGLER_MIN_WAIT_MS - 1);
  assert.equal(c0.downloadsWaitOver(0), false);
  run.setNow(200 + STRAGGLER_MIN_WAIT_MS);
  assert.equal(c0.downloadsWaitOver(0), true);
  assert.equal(c0.downloadsSettled(0), false, "the pull itself goes on");
  for (const c of run.clients) c.close();
});

Deno.test("RoundResults: a witness waiting on a straggler pulls its Finished at once, not at the next tick", async () => {
  const net = new FakeNet();
  const { clients, view, peers, keys, publish, finish, now } = round0On(net);
  // Client 0 never hears client 2's Finished on the gossip (a connection that closed under it).
  net.lose = (to, from, message) =>
    message.kind === "Finished" && toHex(to) === keys[0] && toHex(from) === keys[2];
  // Every result arrives (a Finished without one would have client 0 pull its trainer anyway).
  for (const a of view.assignments) await publish(a.clientIndex, 0);
  await finish(2, 90);
  assert.equal(clients[0].witnessWaitOver(0, peers), false, "one of three: no majority");
  await finish(0, 100);
  await finish(1, 150);
  // A majority: the question itself asks client 2, which answers with its Finished.
  assert.equal(clients[0].witnessWaitOver(0, peers), false);
  await settle("client 2's Finished pulled", () => clients[0].witnessWaitOver(0, peers));
  assert.equal(now(), 150, "no straggler wait spent");
  const events = net.members.get(keys[0])!.events;
  assert.ok(events.some((e) => e.event === "announcements_recovered"));
  for (const c of clients) c.close();
});
