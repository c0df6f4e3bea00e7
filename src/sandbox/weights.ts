/**
 * Capped market-cap weights: weights proportional to market cap, no weight above `cap`,
 * the excess redistributed over the others in proportion to their caps until none is over.
 */
export function cappedWeights(marketCaps: number[], cap: number): number[] {
  const n = marketCaps.length;
  if (n === 0) return [];
  const limit = Math.max(cap, 1 / n);
  const fixed = new Array<boolean>(n).fill(false);
  let w = new Array<number>(n).fill(0);
  for (;;) {
    const freeCap = marketCaps.reduce((s, c, i) => (fixed[i] ? s : s + c), 0);
    const freeShare = 1 - fixed.filter(Boolean).length * limit;
    w = marketCaps.map((c, i) => (fixed[i] ? limit : (c / freeCap) * freeShare));
    const over = w.map((x, i) => !fixed[i] && x > limit + 1e-12);
    if (!over.some(Boolean)) return w;
    over.forEach((o, i) => {
      if (o) fixed[i] = true;
    });
  }
}

export function equalWeights(n: number): number[] {
  return new Array<number>(n).fill(1 / n);
}
