/**
 * What replaying a peer's result needs, without the network: the trainer, the replayer, the
 * verdicts, the attacks and the model loader. `bench-verify` (bench/verification/) imports them
 * from here rather than client/mod.ts, whose libp2p and hub imports the lent GPU machine's small
 * import map (bench/gpu/import_map.json) does not carry.
 *
 * @module
 */
export { gradientFactor, otherBatch, randomSigns, republish, RESULT_ATTACKS } from "../attacks.ts";
export { loadModel } from "../model_source.ts";
export { ResultReplayer } from "../replayer.ts";
export { judgeChain, type Judgement, judgeReplay } from "../results/verify_check.ts";
export { NetworkTrainer } from "../trainer.ts";
