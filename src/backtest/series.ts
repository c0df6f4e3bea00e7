import { DAY_MS, type ValuePoint } from './metrics.ts';

/**
 * Daily closes of a value, gathered as the replay goes so that memory does not grow with
 * the number of items: the first point, one point at each 00:00 UTC boundary crossed (the
 * value as of the last observation at or before it) and the last point. The value is asked
 * for only when a point is due, so a costly one (a whole book) is computed about once a day.
 */
export class DailyCloses<P extends ValuePoint> {
  readonly points: P[] = [];
  private latest = Number.NEGATIVE_INFINITY;
  private nextBoundary = Number.POSITIVE_INFINITY;

  /** The first point; boundaries at or before it are not repeated. */
  start(point: P): void {
    this.points.push(point);
    this.latest = point.t;
    this.nextBoundary = (Math.floor(point.t / DAY_MS) + 1) * DAY_MS;
  }

  get started(): boolean {
    return this.points.length > 0;
  }

  /**
   * Time moves on to `t`: every boundary in [latest observation, t) closes at the value
   * `valueNow` gives, which is still the one as of the latest observation.
   */
  advance(t: number, valueNow: (boundary: number) => P): void {
    if (this.nextBoundary < t) {
      let value: P | undefined;
      for (; this.nextBoundary < t; this.nextBoundary += DAY_MS) {
        value ??= valueNow(this.nextBoundary);
        this.points.push(value.t === this.nextBoundary ? value : { ...value, t: this.nextBoundary });
      }
    }
    if (t > this.latest) this.latest = t;
  }

  /** The last point, at the time of the latest observation (unless that is the first point's). */
  finish(valueNow: (t: number) => P): P[] {
    if (this.points.at(-1)!.t !== this.latest) this.points.push(valueNow(this.latest));
    return this.points;
  }
}
