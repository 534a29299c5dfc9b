/**
 * The error of everything evals read: a task's files (missing, unreadable, a malformed row) and
 * a request that cannot fit the model. Messages name the file, the row and the field.
 *
 * @module
 */

/** A task's data or request is wrong; the message says where and what. */
export class EvalDataError extends Error {
  /** Always `"EvalDataError"`. */
  override name = "EvalDataError";
}
