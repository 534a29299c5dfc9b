/**
 * How far the long phases of loading an epoch's model got, before its upload: a 1B model's
 * 4.9 GB take seconds to minutes to fetch from peers, to download from the Hub (each weights
 * file a phase of its own), to read from a folder, to seed on the host and to digest, and a
 * person must see them move (the client logs each as `model_load`).
 *
 * @module
 */

/** The long phases of a model load on the host. */
export const MODEL_LOAD_PHASES = ["fetch", "download", "read", "seeded_init", "digest"] as const;
/** One of {@link MODEL_LOAD_PHASES}. */
export type ModelLoadPhase = typeof MODEL_LOAD_PHASES[number];

/**
 * Called as each phase starts; what it returns hears the phase's bytes done and total, after
 * every piece (the caller throttles).
 */
export type ModelLoadProgress = (
  phase: ModelLoadPhase,
) => (doneBytes: number, totalBytes: number) => void;
