import { badParams } from './errors.ts';

/** Strict readers of query parameters: anything malformed is a 400 that names the parameter. */
type Issues = { param: string; issue: string }[];

export class QueryReader {
  readonly issues: Issues = [];

  constructor(private readonly params: URLSearchParams) {}

  private single(name: string): string | undefined {
    const all = this.params.getAll(name);
    if (all.length > 1) this.issues.push({ param: name, issue: 'given more than once' });
    return all[0];
  }

  positiveInt(name: string, fallback: number, max?: number): number {
    const raw = this.single(name);
    if (raw === undefined) return fallback;
    if (!/^[1-9]\d{0,8}$/.test(raw)) {
      this.issues.push({ param: name, issue: `must be a whole number from 1${max ? ` to ${max}` : ''}` });
      return fallback;
    }
    const n = Number(raw);
    if (max !== undefined && n > max) {
      this.issues.push({ param: name, issue: `must be at most ${max}` });
      return fallback;
    }
    return n;
  }

  nonNegativeInt(name: string): number | undefined {
    const raw = this.single(name);
    if (raw === undefined) return undefined;
    if (!/^(0|[1-9]\d{0,8})$/.test(raw)) {
      this.issues.push({ param: name, issue: 'must be a whole number >= 0' });
      return undefined;
    }
    return Number(raw);
  }

  /** An ISO 8601 date (`2026-01-01`) or date-time with `Z` or an offset. */
  timestamp(name: string): number | undefined {
    const raw = this.single(name);
    if (raw === undefined) return undefined;
    const ok = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/.test(raw);
    const t = ok ? Date.parse(raw) : NaN;
    if (Number.isNaN(t)) {
      this.issues.push({ param: name, issue: 'must be an ISO 8601 date or date-time (e.g. 2026-11-22T10:00:00.000Z)' });
      return undefined;
    }
    return t;
  }

  oneOf<T extends string>(name: string, values: readonly T[]): T | undefined {
    const raw = this.single(name);
    if (raw === undefined) return undefined;
    if (!(values as readonly string[]).includes(raw)) {
      this.issues.push({ param: name, issue: `must be one of ${values.join(', ')}` });
      return undefined;
    }
    return raw as T;
  }

  /** `page`/`limit` (the contract), or `limit`/`offset` (the other form of the live docs). */
  paging(): { offset: number; page: number; limit: number } {
    const limit = this.positiveInt('limit', 10, 100);
    const offset = this.nonNegativeInt('offset');
    if (offset !== undefined && this.params.has('page')) {
      this.issues.push({ param: 'offset', issue: 'give either page or offset, not both' });
    }
    if (offset !== undefined) return { offset, page: Math.floor(offset / limit) + 1, limit };
    const page = this.positiveInt('page', 1);
    return { offset: (page - 1) * limit, page, limit };
  }

  /** Throws the 400 listing every problem found so far. */
  done(): void {
    if (this.issues.length > 0) throw badParams(this.issues);
  }
}
