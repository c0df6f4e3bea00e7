import { mulberry32 } from '../core/index.ts';

/**
 * Seeded randomness for the simulated market. Each token and index draws from its own
 * stream (seeded by a hash of the sandbox seed and its name), so adding a token does not
 * change the path of any other.
 */
export function hashString(text: string): number {
  let h = 1779033703 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    h = Math.imul(h ^ text.charCodeAt(i), 3432918353);
    h = (h << 13) | (h >>> 19);
  }
  h = Math.imul(h ^ (h >>> 16), 2246822507);
  h = Math.imul(h ^ (h >>> 13), 3266489909);
  return (h ^= h >>> 16) >>> 0;
}

export function streamFor(seed: number, name: string): () => number {
  return mulberry32(hashString(`${seed}:${name}`));
}

/** A standard normal draw (Box-Muller). */
export function normal(random: () => number): number {
  const u = Math.max(random(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** A uniform number in [0, 1) fixed by `name`: the same question always gets the same answer. */
export function unit(seed: number, name: string): number {
  return hashString(`${seed}:${name}`) / 4294967296;
}
