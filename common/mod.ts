/**
 * The vocabulary every room speaks, and nothing else: the plain types of a run (a batch, a
 * key, where data lives, the schedule and the optimizer it names), bytes and hex, coordinator
 * time (seconds with at most millisecond precision), the learning-rate schedule, the errors of a
 * bad command line or config file, the TOML table reader every config file goes through,
 * terminal-safe rendering of untrusted text, the order statistics benches report, the
 * Prometheus text format the dashboard and the client write, running work written as steps, and
 * the bookkeeping of replies owed by worker threads.
 *
 * Pure: no clock, file, socket, randomness or logging, and no import of any other room, so
 * data providers, the optimizer, the trainer, the client and the coordinator can all depend on
 * it without depending on one another (tools/rooms.ts holds the rule).
 *
 * @module
 */

export * from "./types.ts";
export * from "./bytes.ts";
export * from "./time.ts";
export * from "./lr_schedule.ts";
export * from "./usage_error.ts";
export * from "./config_error.ts";
export * from "./config_reader.ts";
export * from "./printable.ts";
export * from "./stats.ts";
export * from "./prometheus.ts";
export * from "./steps.ts";
export * from "./pending_replies.ts";
