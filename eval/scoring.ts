/**
 * Scores from log-likelihoods, as lm-evaluation-harness scores a multiple-choice task: `acc`
 * takes the choice of highest log-likelihood, `acc_norm` the highest log-likelihood per
 * character of the choice (without the delimiter), and a task's score is the mean over its
 * documents with the standard error of that mean.
 *
 * Pure.
 *
 * @module
 */

/** The first index of the largest value (numpy's `argmax`). */
export function argmax(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

/** Length of a choice as the harness counts it: Unicode code points. */
export function choiceLength(choice: string): number {
  return Math.max(1, [...choice].length);
}

/** One document's verdicts: whether each metric picked the right choice. */
export interface DocumentScore {
  readonly acc: number;
  readonly accNorm: number;
}

/** Scores one document from its choices' log-likelihoods. */
export function scoreDocument(
  logLikelihoods: readonly number[],
  choices: readonly string[],
  answer: number,
): DocumentScore {
  if (logLikelihoods.length !== choices.length) {
    throw new RangeError(`${logLikelihoods.length} scores for ${choices.length} choices`);
  }
  const normed = logLikelihoods.map((ll, i) => ll / choiceLength(choices[i]));
  return {
    acc: argmax(logLikelihoods) === answer ? 1 : 0,
    accNorm: argmax(normed) === answer ? 1 : 0,
  };
}

/** A metric over a task's documents. */
export interface MetricSummary {
  /** The mean. */
  readonly value: number;
  /** The standard error of the mean (sample standard deviation over √n; 0 for one document). */
  readonly stderr: number;
}

/** The mean and its standard error, as the harness reports them. */
export function summarize(values: readonly number[]): MetricSummary {
  const n = values.length;
  if (n === 0) throw new RangeError("no documents to summarize");
  const mean = values.reduce((a, b) => a + b, 0) / n;
  if (n === 1) return { value: mean, stderr: 0 };
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1);
  return { value: mean, stderr: Math.sqrt(variance / n) };
}
