import { DAY_MS, type EquityPoint, type ValuePoint, dailySeries } from './metrics.ts';

/** A value as of some time; `exposure` only for equity. */
export interface Close {
  value: number;
  exposure?: number;
}

/** Where a series' value as of now comes from. */
export interface CloseSource {
  closeAt(t: number): Close;
}

/**
 * Daily closes of a value, gathered as the replay goes so that memory does not grow with
 * the number of items: the first point, one point at each 00:00 UTC boundary crossed (the
 * value as of the last observation at or before it) and the last point. The value is asked
 * for only when a point is due, so a costly one (a whole book) is computed about once a day.
 * The points are kept in columns of float64 outside the JavaScript heap, and made objects
 * only when the run is over: thousands of small objects living for the whole replay were
 * copied and promoted by the garbage collector, and made V8 grow its young generation on a
 * long run.
 */
export class DailyCloses {
  private times = new Float64Array(64);
  private values = new Float64Array(64);
  private exposures = new Float64Array(64);
  private size = 0;
  private latest = Number.NEGATIVE_INFINITY;
  private nextBoundary = Number.POSITIVE_INFINITY;

  constructor(private readonly source: CloseSource) {}

  /** The first point; boundaries at or before it are not repeated. */
  start(t: number, close: Close): void {
    this.push(t, close);
    this.latest = t;
    this.nextBoundary = (Math.floor(t / DAY_MS) + 1) * DAY_MS;
  }

  get started(): boolean {
    return this.size > 0;
  }

  /**
   * Time moves on to `t`: every boundary in [latest observation, t) closes at the value
   * the source gives, which is still the one as of the latest observation.
   */
  advance(t: number): void {
    if (this.nextBoundary < t) {
      const close = this.source.closeAt(this.nextBoundary);
      for (; this.nextBoundary < t; this.nextBoundary += DAY_MS) this.push(this.nextBoundary, close);
    }
    if (t > this.latest) this.latest = t;
  }

  /** The last point, at the time of the latest observation (unless that is the first point's). */
  finish(): void {
    if (this.times[this.size - 1] !== this.latest) this.push(this.latest, this.source.closeAt(this.latest));
  }

  /** The points so far as a {@link DailyCurve}, without the exposures. */
  curve(): DailyCurve {
    return new DailyCurve(this.times.slice(0, this.size), this.values.slice(0, this.size));
  }

  equityPoints(): EquityPoint[] {
    return Array.from({ length: this.size }, (_, i) => ({ t: this.times[i]!, value: this.values[i]!, exposure: this.exposures[i]! }));
  }

  private push(t: number, close: Close): void {
    if (this.size === this.times.length) {
      this.times = grown(this.times);
      this.values = grown(this.values);
      this.exposures = grown(this.exposures);
    }
    this.times[this.size] = t;
    this.values[this.size] = close.value;
    this.exposures[this.size] = close.exposure ?? 0;
    this.size++;
  }
}

function grown(column: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> {
  const next = new Float64Array(column.length * 2);
  next.set(column);
  return next;
}

/**
 * A series of values in two columns of float64: an index's daily values, which a run keeps
 * and its report reads without an object per point (40 indexes over 4 years are 58,400
 * points, held by the result, the report and the page's data at once when they were objects).
 */
export class DailyCurve {
  constructor(
    readonly times: Float64Array,
    readonly values: Float64Array,
  ) {}

  /** A curve of `points`, on its daily series ({@link dailySeries}): what a report makes of a list a user gave or edited. */
  static daily(points: readonly ValuePoint[]): DailyCurve {
    const series = dailySeries(points);
    return new DailyCurve(
      Float64Array.from(series, (p) => p.t),
      Float64Array.from(series, (p) => p.value),
    );
  }

  get length(): number {
    return this.times.length;
  }

  /** `[t, value]` per point, each value through `round` when given. */
  pairs(): [number, number][];
  pairs<V>(round: (value: number) => V): [number, V][];
  pairs(round?: (value: number) => unknown): [number, unknown][] {
    return Array.from({ length: this.length }, (_, i): [number, unknown] => [this.times[i]!, round === undefined ? this.values[i]! : round(this.values[i]!)]);
  }

  points(): ValuePoint[] {
    return Array.from({ length: this.length }, (_, i) => ({ t: this.times[i]!, value: this.values[i]! }));
  }
}
