// Confidence intervals for the chart whiskers, from a mean, a standard
// deviation and a sample count. The backend computes the same half-width
// (`ci95` in the JSON) with Student's t; this helper lets the UI draw whiskers
// for any summary, and the tests pin it against the backend's figures.

/** Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom. */
const T975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131,
  2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

const Z975 = 1.959964;

/**
 * The 0.975 quantile of Student's t with `df` degrees of freedom: a table up
 * to 30, then the Cornish–Fisher expansion in 1/df (error under 1e-4 there),
 * tending to the normal 1.96.
 */
export function tQuantile975(df: number): number {
  if (!(df >= 1)) return Number.NaN;
  const k = Math.floor(df);
  if (k <= 30) return T975[k - 1];
  const z = Z975;
  const z3 = z ** 3;
  const z5 = z ** 5;
  return z + (z3 + z) / (4 * k) + (5 * z5 + 16 * z3 + 3 * z) / (96 * k * k);
}

/** Half-width of the 95% interval of the mean: t(n-1) · sd / √n; null below 2 samples. */
export function ci95HalfWidth(sd: number | null | undefined, n: number | null | undefined): number | null {
  if (sd == null || n == null || !Number.isFinite(sd) || n < 2) return null;
  return (tQuantile975(n - 1) * sd) / Math.sqrt(n);
}

/** The 95% interval [low, high] around a mean; a zero-width interval when it cannot be computed. */
export function ci95Interval(
  mean: number,
  sd: number | null | undefined,
  n: number | null | undefined,
): { low: number; high: number; half: number | null } {
  const half = ci95HalfWidth(sd, n);
  return half === null ? { low: mean, high: mean, half } : { low: mean - half, high: mean + half, half };
}
