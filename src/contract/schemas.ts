import { z } from 'zod';

/**
 * Record schemas of the API contract (../shared/api-contract.md), built in two modes from
 * one definition so client and sandbox can never disagree on a field:
 * - `lenient` (the client): unknown fields are kept, fields that only our contract adds
 *   (not the live service's documentation) may be missing, and an unknown enum value is
 *   reported through `onUnknown` and passed through.
 * - `strict` (the sandbox's own contract tests): no unknown field, every field required,
 *   timestamps in ISO 8601 UTC with milliseconds.
 */
export type SchemaMode = 'lenient' | 'strict';

export interface SchemaOptions {
  mode: SchemaMode;
  /** Called for each enum value outside the contract (lenient mode only). */
  onUnknown?: (field: string, value: string) => void;
}

/** Keeps autocomplete for the known values while admitting any string the server may add. */
export type Open<T extends string> = T | (string & {});

export const INDEX_STATUSES = ['active', 'paused', 'retired'] as const;
export const REBALANCE_FREQUENCIES = ['daily', 'weekly', 'monthly', 'quarterly'] as const;
export const REBALANCE_STATUSES = ['announced', 'completed', 'cancelled'] as const;
export const REBALANCE_REASONS = ['scheduled', 'methodology', 'corporate_action', 'manual'] as const;
export const CHANGE_ACTIONS = ['add', 'remove', 'increase', 'decrease'] as const;
export const WEIGHTINGS = ['market_cap', 'equal'] as const;
export const RETURN_PERIODS = ['1h', '24h', '7d', '30d', '90d', '1y', 'ytd', 'inception'] as const;
export const HISTORY_INTERVALS = ['1h', '1d'] as const;
/** The spacing of history points per interval. */
export const INTERVAL_MS = { '1h': 3_600_000, '1d': 86_400_000 } as const satisfies Record<(typeof HISTORY_INTERVALS)[number], number>;

export function buildSchemas(options: SchemaOptions) {
  const strict = options.mode === 'strict';
  const obj = (strict ? z.strictObject : z.looseObject) as typeof z.looseObject;
  /**
   * A field our contract adds to what the live service documents: optional to the client.
   * Typed as optional in both modes, because the inferred types describe what the client sees.
   */
  const ours = <S extends z.ZodType>(schema: S) => (strict ? schema : schema.optional()) as z.ZodOptional<S>;
  const timestamp = strict ? z.iso.datetime({ offset: false, precision: 3 }) : z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'not a date-time');
  const num = z.number();
  const oneOf = <const T extends readonly [string, ...string[]]>(field: string, values: T) => {
    if (strict) return z.enum(values) as unknown as z.ZodType<Open<T[number]>>;
    const known = new Set<string>(values);
    return z.string().transform((value) => {
      if (!known.has(value)) options.onUnknown?.(field, value);
      return value as Open<T[number]>;
    });
  };

  const methodology = obj({
    weighting: oneOf('methodology.weighting', WEIGHTINGS),
    max_weight: num,
    min_constituents: z.number().int(),
    max_constituents: z.number().int(),
    base_value: num,
    divisor: num,
  });

  const indexSummary = obj({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    current_price: num,
    price_change_24h: num,
    price_change_percentage_24h: num,
    market_cap: num,
    total_supply: num,
    circulating_supply: num,
    last_updated: timestamp,
    symbol: ours(z.string()),
    category: ours(z.string()),
    status: ours(oneOf('index.status', INDEX_STATUSES)),
    constituents_count: ours(z.number().int()),
    rebalance_frequency: ours(oneOf('index.rebalance_frequency', REBALANCE_FREQUENCIES)),
    last_rebalance_at: ours(timestamp.nullable()),
    next_rebalance_at: ours(timestamp.nullable()),
  });

  const indexDetail = indexSummary.extend({
    methodology: ours(methodology),
    fees: ours(obj({ management_bps: num })),
  });

  const constituent = obj({
    address: z.string(),
    symbol: z.string(),
    name: ours(z.string()),
    weight: num,
    target_weight: num,
    price_usd: num,
    units: ours(num),
    value_usd: ours(num),
  });

  const composition = obj({
    index_id: z.string(),
    as_of: timestamp,
    rebalance_id: ours(z.string().nullable()),
    constituents: z.array(constituent).superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((c, i) => {
        if (seen.has(c.address)) ctx.addIssue({ code: 'custom', path: [i, 'address'], message: 'the same token is listed twice' });
        seen.add(c.address);
      });
    }),
  });

  const returnsShape = Object.fromEntries(RETURN_PERIODS.map((p) => [p, ours(num.nullable())])) as unknown as Record<(typeof RETURN_PERIODS)[number], z.ZodOptional<z.ZodNullable<z.ZodNumber>>>;

  const performance = obj({
    index_id: z.string(),
    as_of: timestamp,
    nav: num,
    returns: obj(returnsShape),
    volatility_30d: ours(num.nullable()),
    max_drawdown_90d: ours(num.nullable()),
    sharpe_90d: ours(num.nullable()),
  });

  const historyPoint = obj({
    timestamp,
    nav: num,
    constituents: ours(z.array(obj({ address: z.string(), symbol: z.string(), price_usd: num, weight: num }))),
  });

  const rebalanceChange = obj({
    address: z.string(),
    symbol: z.string(),
    action: oneOf('rebalance.changes.action', CHANGE_ACTIONS),
    old_weight: num,
    new_weight: num,
  });

  const rebalance = obj({
    id: z.string(),
    index_id: z.string(),
    status: oneOf('rebalance.status', REBALANCE_STATUSES),
    announced_at: timestamp,
    effective_at: timestamp,
    completed_at: ours(timestamp.nullable()),
    reason: ours(oneOf('rebalance.reason', REBALANCE_REASONS)),
    changes: z.array(rebalanceChange),
  });

  const token = obj({
    address: z.string(),
    symbol: z.string(),
    name: z.string(),
    decimals: ours(z.number().int()),
    price_usd: num,
    market_cap_usd: ours(num),
    volume_24h_usd: ours(num),
    change_24h: ours(num),
    updated_at: ours(timestamp),
  });

  const holding = obj({
    index_id: z.string(),
    units: num,
    nav: num,
    value_usd: num,
    cost_basis_usd: ours(num),
    unrealized_pnl_usd: ours(num),
  });

  const portfolio = obj({
    wallet: z.string(),
    as_of: timestamp,
    total_value_usd: num,
    holdings: z.array(holding),
  });

  const tokenPair = obj({
    access_token: z.string(),
    refresh_token: z.string(),
    expires_in: z.number().int().positive(),
  });

  const challenge = obj({
    message: z.string(),
    nonce: z.string(),
    expires_at: timestamp,
  });

  const pagination = obj({ page: z.number().int(), limit: z.number().int(), total: z.number().int() });

  const meta = obj({
    timestamp: ours(timestamp),
    request_id: ours(z.string()),
    pagination: pagination.optional(),
  });

  const errorEnvelope = obj({
    success: z.literal(false),
    error: obj({
      code: z.string(),
      message: z.string(),
      reason: z.string().optional(),
      details: z.array(obj({ param: z.string(), issue: z.string() })).optional(),
    }),
    meta,
  });

  return {
    methodology,
    indexSummary,
    indexDetail,
    constituent,
    composition,
    performance,
    historyPoint,
    rebalanceChange,
    rebalance,
    token,
    holding,
    portfolio,
    tokenPair,
    challenge,
    pagination,
    meta,
    errorEnvelope,
  };
}

export type RecordSchemas = ReturnType<typeof buildSchemas>;
type Out<K extends keyof RecordSchemas> = z.output<RecordSchemas[K]>;

export type IndexSummary = Out<'indexSummary'>;
export type IndexDetail = Out<'indexDetail'>;
export type Methodology = Out<'methodology'>;
export type Constituent = Out<'constituent'>;
export type Composition = Out<'composition'>;
export type Performance = Out<'performance'>;
export type HistoryPoint = Out<'historyPoint'>;
export type RebalanceChange = Out<'rebalanceChange'>;
export type Rebalance = Out<'rebalance'>;
export type Token = Out<'token'>;
export type Holding = Out<'holding'>;
export type Portfolio = Out<'portfolio'>;
export type TokenPair = Out<'tokenPair'>;
export type Challenge = Out<'challenge'>;
export type ReturnPeriod = (typeof RETURN_PERIODS)[number];
export type HistoryInterval = (typeof HISTORY_INTERVALS)[number];
export type RebalanceStatus = (typeof REBALANCE_STATUSES)[number];
