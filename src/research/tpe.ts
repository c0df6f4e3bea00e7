/**
 * The Tree-structured Parzen Estimator (Bergstra, Bardenet, Bengio, Kégl: "Algorithms for
 * Hyper-Parameter Optimization", NIPS 2011), in its univariate form, as hyperopt and Optuna
 * run it by default. Finished trials are split at a quantile of their score into "good"
 * (the best `gamma` share) and "bad"; each dimension gets two Parzen densities on [0, 1],
 * l(x) from the good values and g(x) from the bad ones (a truncated Gaussian per value plus
 * a flat prior); candidates are drawn from l and the one with the largest l(x) / g(x) wins.
 *
 * Bandwidths follow hyperopt: a value's Gaussian is as wide as the larger gap to its
 * neighbours (the interval's ends included), kept within [1 / (10 + n), 1]. A choice
 * dimension uses counts plus one per value instead of Gaussians.
 */

export interface TpeOptions {
  /** Share of finished trials counted as good. @default 0.25 */
  gamma?: number;
  /** Candidates drawn from l(x) per dimension. @default 24 */
  candidates?: number;
}

export interface Observation {
  /** One unit position per dimension. */
  u: number[];
  /** Higher is better; -Infinity for a trial without a figure. */
  score: number;
}

/** Sizes of the dimensions: 0 for a continuous one, the number of values for a choice. */
export type Levels = readonly number[];

/** A new point in [0, 1]^d from the finished trials. */
export function tpePropose(observations: readonly Observation[], levels: Levels, random: () => number, o: TpeOptions = {}): number[] {
  const gamma = o.gamma ?? 0.25;
  const nCandidates = o.candidates ?? 24;
  // Best first; ties keep their trial order, so the split is deterministic.
  const sorted = observations.map((x, i) => ({ x, i })).sort((a, b) => b.x.score - a.x.score || a.i - b.i);
  const nGood = Math.max(1, Math.ceil(gamma * sorted.length));
  const good = sorted.slice(0, nGood).map((s) => s.x);
  const bad = sorted.slice(nGood).map((s) => s.x);
  return levels.map((k, d) => {
    const gv = good.map((x) => x.u[d]!);
    const bv = bad.map((x) => x.u[d]!);
    if (k > 0) return proposeChoice(gv, bv, k, random, nCandidates);
    const l = parzen(gv);
    const g = parzen(bv);
    let best = 0;
    let bestRatio = Number.NEGATIVE_INFINITY;
    for (let c = 0; c < nCandidates; c++) {
      const x = l.sample(random);
      const ratio = Math.log(l.density(x)) - Math.log(g.density(x));
      if (ratio > bestRatio) {
        bestRatio = ratio;
        best = x;
      }
    }
    return best;
  });
}

const SQRT2 = Math.SQRT2;
const SQRT2PI = Math.sqrt(2 * Math.PI);

/** Abramowitz-Stegun 7.1.26: enough for weights of truncated Gaussians. */
function erf(x: number): number {
  const s = Math.sign(x);
  const a = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * a);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a);
  return s * y;
}
const cdf = (x: number, mu: number, sigma: number) => 0.5 * (1 + erf((x - mu) / (sigma * SQRT2)));

export interface Parzen {
  density(x: number): number;
  sample(random: () => number): number;
  /** Centres and widths of the Gaussians (the prior is the flat part). */
  readonly mus: number[];
  readonly sigmas: number[];
}

/** A mixture on [0, 1]: one Gaussian per value, truncated to the interval, plus a flat prior, equally weighted. */
export function parzen(values: readonly number[]): Parzen {
  const n = values.length;
  const sorted = [...values].sort((a, b) => a - b);
  const minSigma = 1 / (10 + n);
  const mus = sorted;
  const sigmas = sorted.map((x, i) => {
    const left = x - (i > 0 ? sorted[i - 1]! : 0);
    const right = (i + 1 < n ? sorted[i + 1]! : 1) - x;
    return Math.min(1, Math.max(minSigma, left, right));
  });
  // Mass of each Gaussian inside [0, 1], to renormalise the truncated parts.
  const mass = mus.map((mu, i) => cdf(1, mu, sigmas[i]!) - cdf(0, mu, sigmas[i]!));
  const w = 1 / (n + 1);
  return {
    mus,
    sigmas,
    density(x) {
      let p = w; // the flat prior's density on [0, 1] is 1
      for (let i = 0; i < n; i++) {
        const z = (x - mus[i]!) / sigmas[i]!;
        p += (w * Math.exp(-0.5 * z * z)) / (sigmas[i]! * SQRT2PI * mass[i]!);
      }
      return p;
    },
    sample(random) {
      const k = Math.floor(random() * (n + 1));
      if (k === n) return random();
      // Rejection from the Gaussian into [0, 1]; its mass there is at least a fair share.
      for (let tries = 0; tries < 100; tries++) {
        const u1 = Math.max(random(), Number.MIN_VALUE);
        const x = mus[k]! + sigmas[k]! * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * random());
        if (x >= 0 && x <= 1) return x;
      }
      return Math.min(1, Math.max(0, mus[k]!));
    },
  };
}

function proposeChoice(good: number[], bad: number[], k: number, random: () => number, nCandidates: number): number {
  const slot = (u: number) => Math.min(k - 1, Math.floor(u * k));
  const weights = (vs: number[]) => {
    const c = new Array<number>(k).fill(1);
    for (const v of vs) c[slot(v)]!++;
    const total = c.reduce((a, b) => a + b, 0);
    return c.map((x) => x / total);
  };
  const l = weights(good);
  const g = weights(bad);
  let best = 0;
  let bestRatio = Number.NEGATIVE_INFINITY;
  for (let c = 0; c < nCandidates; c++) {
    let r = random();
    let i = 0;
    while (i < k - 1 && r >= l[i]!) r -= l[i++]!;
    const ratio = Math.log(l[i]!) - Math.log(g[i]!);
    if (ratio > bestRatio) {
      bestRatio = ratio;
      best = i;
    }
  }
  return (best + 0.5) / k;
}
