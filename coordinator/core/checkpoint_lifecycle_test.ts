import assert from "node:assert/strict";
import {
  checkpointAfterCooldown,
  checkpointAfterReport,
  checkpointWithoutReturningPeers,
} from "./checkpoint_lifecycle.ts";
import { CoordinatorError } from "./errors.ts";
import type { Checkpoint } from "./types.ts";

const hub = { repoId: "org/a", revision: null };
const hub2 = { repoId: "org/b", revision: "rev" };
const gcs = { bucket: "bucket-a", prefix: null };
const gcs2 = { bucket: "bucket-b", prefix: "p/" };

Deno.test("after Cooldown: Hub/Dummy -> P2P, Gcs -> P2PGcs, others kept", () => {
  assert.deepEqual(checkpointAfterCooldown({ kind: "Hub", repo: hub }), { kind: "P2P", repo: hub });
  assert.deepEqual(checkpointAfterCooldown({ kind: "Dummy", repo: hub }), {
    kind: "P2P",
    repo: hub,
  });
  assert.deepEqual(checkpointAfterCooldown({ kind: "Gcs", repo: gcs }), {
    kind: "P2PGcs",
    repo: gcs,
  });
  const p2p: Checkpoint = { kind: "P2P", repo: hub };
  assert.equal(checkpointAfterCooldown(p2p), p2p);
});

Deno.test("no returning peers: P2P -> Hub, P2PGcs -> Gcs, others kept", () => {
  assert.deepEqual(checkpointWithoutReturningPeers({ kind: "P2P", repo: hub }), {
    kind: "Hub",
    repo: hub,
  });
  assert.deepEqual(checkpointWithoutReturningPeers({ kind: "P2PGcs", repo: gcs }), {
    kind: "Gcs",
    repo: gcs,
  });
  const d: Checkpoint = { kind: "Dummy", repo: hub };
  assert.equal(checkpointWithoutReturningPeers(d), d);
});

Deno.test("reports: the six accepted transitions of Psyche's Coordinator::checkpoint", () => {
  const cases: Array<[Checkpoint, Checkpoint, Checkpoint]> = [
    [{ kind: "P2P", repo: hub }, { kind: "Hub", repo: hub2 }, { kind: "P2P", repo: hub2 }],
    [{ kind: "P2PGcs", repo: gcs }, { kind: "Gcs", repo: gcs2 }, { kind: "P2PGcs", repo: gcs2 }],
    [{ kind: "Hub", repo: hub }, { kind: "Hub", repo: hub2 }, { kind: "Hub", repo: hub2 }],
    [{ kind: "Gcs", repo: gcs }, { kind: "Gcs", repo: gcs2 }, { kind: "Gcs", repo: gcs2 }],
    [{ kind: "P2PGcs", repo: gcs }, { kind: "Hub", repo: hub2 }, { kind: "P2P", repo: hub2 }],
    [{ kind: "P2P", repo: hub }, { kind: "Gcs", repo: gcs2 }, { kind: "P2PGcs", repo: gcs2 }],
    [{ kind: "Dummy", repo: hub }, { kind: "Hub", repo: hub2 }, { kind: "Hub", repo: hub2 }],
  ];
  for (const [current, report, expected] of cases) {
    assert.deepEqual(checkpointAfterReport(current, report), expected);
  }
});

Deno.test("reports: other pairs and malformed repos are InvalidCheckpoint", () => {
  const bad: Array<[Checkpoint, Checkpoint]> = [
    [{ kind: "Hub", repo: hub }, { kind: "Gcs", repo: gcs }],
    [{ kind: "Gcs", repo: gcs }, { kind: "Hub", repo: hub }],
    [{ kind: "Dummy", repo: hub }, { kind: "Gcs", repo: gcs }],
    [{ kind: "Ephemeral" }, { kind: "Hub", repo: hub }],
    [{ kind: "Hub", repo: hub }, { kind: "Ephemeral" }],
    [{ kind: "Hub", repo: hub }, { kind: "Hub", repo: { repoId: "", revision: null } }],
    [{ kind: "Hub", repo: hub }, { kind: "Hub", repo: { repoId: "a", revision: "é".repeat(33) } }],
    [{ kind: "Gcs", repo: gcs }, {
      kind: "Gcs",
      repo: { bucket: "b", prefix: 5 as unknown as string },
    }],
  ];
  for (const [current, report] of bad) {
    assert.throws(
      () => checkpointAfterReport(current, report),
      (e: unknown) => e instanceof CoordinatorError && e.code === "InvalidCheckpoint",
      `${current.kind} + ${report.kind}`,
    );
  }
});
