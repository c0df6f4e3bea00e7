import type { Sector } from './universe.ts';

export type Frequency = 'daily' | 'weekly' | 'monthly' | 'quarterly';

export interface IndexDefinition {
  id: string;
  name: string;
  description: string;
  category: string;
  sectors: Sector[];
  frequency: Frequency;
  /** Hour of day (UTC) of the scheduled effective time, so daily indexes do not all rebalance at once. */
  hourUtc: number;
  weighting: 'market_cap' | 'equal';
  maxWeight: number;
  minConstituents: number;
  maxConstituents: number;
  managementBps: number;
  /** Days after the market's genesis that the index starts at its base value. */
  inceptionDay: number;
}

/** The live service's four indexes first, then ours, with every rebalance frequency. */
export const INDEX_DEFINITIONS: IndexDefinition[] = [
  {
    id: 'sindex',
    name: 'Solana Ecosystem Index',
    description: 'The largest tokens of the Solana ecosystem by market cap.',
    category: 'ecosystem',
    sectors: ['core', 'defi', 'infra', 'meme', 'ai', 'gaming'],
    frequency: 'monthly',
    hourUtc: 0,
    weighting: 'market_cap',
    maxWeight: 0.25,
    minConstituents: 15,
    maxConstituents: 20,
    managementBps: 50,
    inceptionDay: 0,
  },
  {
    id: 'mindex',
    name: 'Solana Meme Index',
    description: 'The leading meme tokens on Solana.',
    category: 'memes',
    sectors: ['meme'],
    frequency: 'weekly',
    hourUtc: 0,
    weighting: 'market_cap',
    maxWeight: 0.2,
    minConstituents: 10,
    maxConstituents: 15,
    managementBps: 75,
    inceptionDay: 3,
  },
  {
    id: 'dindex',
    name: 'Solana DeFi Index',
    description: 'Exchanges, lending and staking protocols on Solana.',
    category: 'defi',
    sectors: ['defi'],
    frequency: 'monthly',
    hourUtc: 0,
    weighting: 'market_cap',
    maxWeight: 0.25,
    minConstituents: 8,
    maxConstituents: 12,
    managementBps: 60,
    inceptionDay: 5,
  },
  {
    id: 'nindex',
    name: 'Solana Infrastructure Index',
    description: 'Oracles, bridges, DePIN and compute networks on Solana.',
    category: 'infrastructure',
    sectors: ['infra'],
    frequency: 'quarterly',
    hourUtc: 0,
    weighting: 'market_cap',
    maxWeight: 0.3,
    minConstituents: 8,
    maxConstituents: 10,
    managementBps: 60,
    inceptionDay: 7,
  },
  {
    id: 'aindex',
    name: 'Solana AI Agents Index',
    description: 'Tokens of AI agent projects, rebalanced daily.',
    category: 'ai',
    sectors: ['ai'],
    frequency: 'daily',
    hourUtc: 0,
    weighting: 'market_cap',
    maxWeight: 0.3,
    minConstituents: 8,
    maxConstituents: 8,
    managementBps: 90,
    inceptionDay: 10,
  },
  {
    id: 'gindex',
    name: 'Solana Gaming Index',
    description: 'Gaming and metaverse tokens, equal weighted.',
    category: 'gaming',
    sectors: ['gaming'],
    frequency: 'weekly',
    hourUtc: 12,
    weighting: 'equal',
    maxWeight: 0.2,
    minConstituents: 8,
    maxConstituents: 8,
    managementBps: 80,
    inceptionDay: 12,
  },
  {
    id: 'lindex',
    name: 'Solana Liquid Staking Index',
    description: 'Liquid staking tokens of SOL, rebalanced daily.',
    category: 'liquid-staking',
    sectors: ['lst'],
    frequency: 'daily',
    hourUtc: 12,
    weighting: 'market_cap',
    maxWeight: 0.35,
    minConstituents: 8,
    maxConstituents: 8,
    managementBps: 25,
    inceptionDay: 14,
  },
  {
    id: 'tindex',
    name: 'Solana Top 10 Index',
    description: 'The ten largest Solana tokens, rebalanced daily.',
    category: 'large-cap',
    sectors: ['core', 'defi', 'infra', 'meme', 'ai', 'gaming', 'lst'],
    frequency: 'daily',
    hourUtc: 6,
    weighting: 'market_cap',
    maxWeight: 0.3,
    minConstituents: 10,
    maxConstituents: 10,
    managementBps: 40,
    inceptionDay: 20,
  },
];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** How long before `effective_at` a rebalance is announced. */
export const ANNOUNCE_LEAD_MS: Record<Frequency, number> = {
  daily: 6 * HOUR,
  weekly: 2 * DAY,
  monthly: 5 * DAY,
  quarterly: 7 * DAY,
};

/** The first scheduled effective time strictly after `t`. */
export function nextScheduled(def: IndexDefinition, t: number): number {
  const d = new Date(t);
  const at = (y: number, m: number, day: number) => Date.UTC(y, m, day, def.hourUtc);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  switch (def.frequency) {
    case 'daily': {
      const today = at(y, m, d.getUTCDate());
      return today > t ? today : today + DAY;
    }
    case 'weekly': {
      // Mondays.
      const today = at(y, m, d.getUTCDate());
      const daysToMonday = (8 - d.getUTCDay()) % 7;
      const candidate = today + daysToMonday * DAY;
      return candidate > t ? candidate : candidate + 7 * DAY;
    }
    case 'monthly': {
      const first = at(y, m, 1);
      return first > t ? first : at(y, m + 1, 1);
    }
    case 'quarterly': {
      const q = Math.floor(m / 3) * 3;
      const first = at(y, q, 1);
      return first > t ? first : at(y, q + 3, 1);
    }
  }
}
