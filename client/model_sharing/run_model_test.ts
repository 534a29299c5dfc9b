import assert from "node:assert/strict";
import { join } from "node:path";
import "../p2p/exit_fix.ts";
import { writeModelDir } from "../../model/checkpoint.ts";
import { initParams } from "../../model/params.ts";
import { runInitSeed } from "../model_source.ts";
import { createP2PNode } from "../p2p/node.ts";
import { PayloadService } from "../p2p/payload_service.ts";
import { testPublic, testSecret } from "../p2p/test_util.ts";
import { loadRunModel, UnsupportedCheckpointError } from "./run_model.ts";
import { serveModel } from "./serve.ts";
import { tinyModel } from "./testing_model.ts";

Deno.test("the epoch's checkpoint decides where the model comes from", async () => {
  const keys = [1, 2].map(testPublic);
  const nodes = await Promise.all(
    [1, 2].map((n) => createP2PNode({ secretKey: testSecret(n), allowedPeers: keys })),
  );
  const dir = await Deno.makeTempDir({ prefix: "run_model_test_" });
  try {
    const [peer, self] = await Promise.all(
      nodes.map((node) => PayloadService.start(node, { retry: { retries: 0 } })),
    );
    await nodes[1].connect(nodes[0].addresses()[0]);
    const trained = tinyModel(21);
    serveModel(peer, trained);
    const repo = { repoId: "repo", revision: null };
    const base = { runId: "run", payloads: self, providers: [keys[0]], hub: { baseDir: dir } };

    const p2p = await loadRunModel({ ...base, checkpoint: { kind: "P2P", repo } });
    assert.equal(p2p.source, "p2p");
    assert.deepEqual(p2p.weights, trained.weights);
    assert.match(p2p.origin, /^p2p:[0-9a-f]{64}$/);
    assert.ok(p2p.served !== null);

    // Hub with only a config: the run-seeded init, as every other client builds it.
    const fresh = tinyModel(0);
    await writeModelDir(join(dir, "repo"), fresh);
    await Deno.remove(join(dir, "repo", "model.safetensors"));
    const seeded = await loadRunModel({ ...base, checkpoint: { kind: "Hub", repo } });
    assert.equal(seeded.source, "seeded");
    assert.deepEqual(seeded.weights, initParams(fresh.layout, fresh.config, runInitSeed("run")));
    await writeModelDir(join(dir, "repo"), trained);
    const loaded = await loadRunModel({ ...base, checkpoint: { kind: "Dummy", repo } });
    assert.equal(loaded.source, "loaded");
    assert.equal(loaded.origin, join(dir, "repo"));
    assert.deepEqual(loaded.weights, trained.weights);
    // The override wins over a P2P checkpoint.
    const forced = await loadRunModel({
      ...base,
      checkpoint: { kind: "P2P", repo },
      override: "repo",
    });
    assert.equal(forced.source, "loaded");
    await assert.rejects(
      () => loadRunModel({ ...base, checkpoint: { kind: "Ephemeral" } }),
      UnsupportedCheckpointError,
    );
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
    await Deno.remove(dir, { recursive: true });
  }
});
