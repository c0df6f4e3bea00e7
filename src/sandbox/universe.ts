import bs58 from 'bs58';
import { streamFor } from './prng.ts';

export type Sector = 'core' | 'meme' | 'defi' | 'infra' | 'ai' | 'gaming' | 'lst';

interface TokenSeed {
  symbol: string;
  name: string;
  sector: Sector;
  /** Starting price in USD and circulating supply: they set the starting market cap. */
  price: number;
  supply: number;
}

const T = (symbol: string, name: string, sector: Sector, price: number, supply: number): TokenSeed => ({ symbol, name, sector, price, supply });

/** The shared universe every index draws from; names evoke Solana tokens, figures are invented. */
const SEEDS: TokenSeed[] = [
  T('SOL', 'Solana', 'core', 180, 480e6),
  T('JUP', 'Jupiter', 'defi', 0.9, 1.35e9),
  T('RAY', 'Raydium', 'defi', 3.1, 290e6),
  T('ORCA', 'Orca', 'defi', 2.4, 55e6),
  T('DRIFT', 'Drift', 'defi', 0.7, 300e6),
  T('KMNO', 'Kamino', 'defi', 0.06, 1.2e9),
  T('MNDE', 'Marinade', 'defi', 0.12, 520e6),
  T('JTO', 'Jito', 'defi', 2.8, 280e6),
  T('SBR', 'Saber', 'defi', 0.002, 1.1e9),
  T('MNGO', 'Mango', 'defi', 0.02, 1.0e9),
  T('SLND', 'Solend', 'defi', 0.4, 60e6),
  T('STEP', 'Step Finance', 'defi', 0.03, 260e6),
  T('FIDA', 'Bonfida', 'defi', 0.25, 800e6),
  T('METEO', 'Meteora', 'defi', 1.1, 480e6),
  T('SANC', 'Sanctum', 'defi', 0.45, 180e6),
  T('BONK', 'Bonk', 'meme', 0.000025, 75e12),
  T('WIF', 'dogwifhat', 'meme', 1.8, 998e6),
  T('POPCAT', 'Popcat', 'meme', 0.9, 980e6),
  T('MEW', 'cat in a dogs world', 'meme', 0.006, 88e9),
  T('BOME', 'Book of Meme', 'meme', 0.007, 68e9),
  T('SLERF', 'Slerf', 'meme', 0.2, 500e6),
  T('MYRO', 'Myro', 'meme', 0.08, 1e9),
  T('WEN', 'Wen', 'meme', 0.0001, 700e9),
  T('SAMO', 'Samoyedcoin', 'meme', 0.01, 4.5e9),
  T('PNUT', 'Peanut', 'meme', 0.5, 1e9),
  T('GOAT', 'Goatseus', 'meme', 0.4, 1e9),
  T('MOODENG', 'Moo Deng', 'meme', 0.2, 990e6),
  T('FWOG', 'Fwog', 'meme', 0.15, 976e6),
  T('MICHI', 'Michi', 'meme', 0.08, 555e6),
  T('PONKE', 'Ponke', 'meme', 0.3, 555e6),
  T('GIGA', 'Gigachad', 'meme', 0.03, 9.6e9),
  T('CHILL', 'Chill Guy', 'meme', 0.1, 1e9),
  T('PYTH', 'Pyth Network', 'infra', 0.35, 3.6e9),
  T('W', 'Wormhole', 'infra', 0.25, 2.7e9),
  T('HNT', 'Helium', 'infra', 5.5, 170e6),
  T('RENDER', 'Render', 'infra', 6.5, 510e6),
  T('IO', 'io.net', 'infra', 2.2, 140e6),
  T('NOS', 'Nosana', 'infra', 1.5, 80e6),
  T('SHDW', 'Shadow', 'infra', 0.3, 190e6),
  T('GRASS', 'Grass', 'infra', 2.0, 240e6),
  T('HONEY', 'Hivemapper', 'infra', 0.03, 3.3e9),
  T('MOBILE', 'Helium Mobile', 'infra', 0.0012, 85e9),
  T('IOT', 'Helium IOT', 'infra', 0.0009, 70e9),
  T('ACS', 'Access', 'infra', 0.002, 38e9),
  T('GRIFF', 'Griffain', 'ai', 0.15, 1e9),
  T('ZEREB', 'Zerebro', 'ai', 0.08, 1e9),
  T('AI16', 'ai16z', 'ai', 0.4, 1.1e9),
  T('ARC', 'AI Rig Complex', 'ai', 0.12, 1e9),
  T('SWARM', 'Swarms', 'ai', 0.05, 1e9),
  T('ALCH', 'Alchemist AI', 'ai', 0.1, 850e6),
  T('FARTB', 'Fartboy', 'ai', 0.02, 1e9),
  T('NEUR', 'Neur', 'ai', 0.03, 1e9),
  T('AVA', 'Ava AI', 'ai', 0.06, 1e9),
  T('SNAI', 'SwarmNode', 'ai', 0.01, 1e9),
  T('TAOS', 'Taos Agents', 'ai', 0.04, 800e6),
  T('BUZZ', 'Hive AI', 'ai', 0.02, 1e9),
  T('ATLAS', 'Star Atlas', 'gaming', 0.003, 10e9),
  T('POLIS', 'Star Atlas DAO', 'gaming', 0.15, 300e6),
  T('GENE', 'Genopets', 'gaming', 0.05, 100e6),
  T('AURY', 'Aurory', 'gaming', 0.2, 60e6),
  T('STAR', 'StarHeroes', 'gaming', 0.02, 500e6),
  T('SNS', 'SynesisOne', 'gaming', 0.003, 1e9),
  T('PRCL', 'Parcl', 'gaming', 0.15, 280e6),
  T('NYAN', 'Nyan Heroes', 'gaming', 0.04, 150e6),
  T('SHRAP', 'Shrapnel', 'gaming', 0.01, 900e6),
  T('BORG', 'Borg Arena', 'gaming', 0.03, 200e6),
  T('CROWN', 'Crown Quest', 'gaming', 0.05, 120e6),
  T('MSOL', 'Marinade Staked SOL', 'lst', 220, 4.5e6),
  T('JITOSOL', 'Jito Staked SOL', 'lst', 215, 14e6),
  T('BSOL', 'BlazeStake Staked SOL', 'lst', 212, 3.2e6),
  T('INF', 'Sanctum Infinity', 'lst', 225, 2.1e6),
  T('JUPSOL', 'Jupiter Staked SOL', 'lst', 205, 4.8e6),
  T('HSOL', 'Helius Staked SOL', 'lst', 203, 1.4e6),
  T('BNSOL', 'Binance Staked SOL', 'lst', 207, 6.5e6),
  T('DSOL', 'Drift Staked SOL', 'lst', 204, 0.9e6),
  T('VSOL', 'Vault Staked SOL', 'lst', 202, 0.6e6),
  T('LAINESOL', 'Laine Staked SOL', 'lst', 209, 0.4e6),
  T('PICOSOL', 'Pico Staked SOL', 'lst', 201, 0.3e6),
  T('EDGESOL', 'Edgevana Staked SOL', 'lst', 206, 0.5e6),
];

export interface Token {
  /** Position in the universe: the key of the price grid. */
  index: number;
  symbol: string;
  name: string;
  sector: Sector;
  address: string;
  decimals: number;
  startPrice: number;
  supply: number;
  /** Hourly volatility of the idiosyncratic part, and exposure to the common SOL factor. */
  sigma: number;
  beta: number;
}

const SIGMA: Record<Sector, number> = { core: 0.006, defi: 0.011, meme: 0.02, infra: 0.01, ai: 0.022, gaming: 0.014, lst: 0.0008 };
const BETA: Record<Sector, number> = { core: 1, defi: 1.2, meme: 1.6, infra: 1.1, ai: 1.5, gaming: 1.2, lst: 1 };

/** The universe for a seed: addresses are 32 random bytes in base58, like Solana mints. */
export function buildUniverse(seed: number): Token[] {
  return SEEDS.map((s, index) => {
    const random = streamFor(seed, `address:${s.symbol}`);
    const bytes = Uint8Array.from({ length: 32 }, () => Math.floor(random() * 256));
    return {
      index,
      symbol: s.symbol,
      name: s.name,
      sector: s.sector,
      address: bs58.encode(bytes),
      decimals: s.sector === 'meme' ? 6 : 9,
      startPrice: s.price,
      supply: s.supply,
      sigma: SIGMA[s.sector],
      beta: BETA[s.sector],
    };
  });
}
