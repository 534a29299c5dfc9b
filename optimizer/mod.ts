/**
 * Optimizers over the flat parameter buffer: AdamW (single node) and DisTrO (decentralized).
 *
 * @module
 */
export {
  ADAMW_DEFAULTS,
  AdamW,
  type AdamWConfig,
  adamwReferenceStep,
  clipScale,
  validateAdamWConfig,
} from "./adamw.ts";
