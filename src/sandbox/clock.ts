/**
 * The fastest simulated clock: about 28 simulated hours per real second. The market is
 * simulated step by step, so a faster clock would keep the server busy catching up.
 */
export const MAX_SPEED = 100_000;

function checkSpeed(speed: number): void {
  if (!Number.isFinite(speed) || speed < 0 || speed > MAX_SPEED) throw new RangeError(`speed must be a number from 0 to ${MAX_SPEED}, got ${speed}`);
}

/**
 * Simulated time: starts at `start` and runs `speed` times faster than the real clock;
 * `advance()` jumps it forward. Speed 0 freezes it, which makes responses reproducible.
 */
export class SimClock {
  private baseSim: number;
  private baseReal: number;

  constructor(
    start: number,
    private speed: number,
    private readonly realNow: () => number = Date.now,
  ) {
    checkSpeed(speed);
    this.baseSim = start;
    this.baseReal = realNow();
  }

  now(): number {
    return Math.floor(this.baseSim + (this.realNow() - this.baseReal) * this.speed);
  }

  get currentSpeed(): number {
    return this.speed;
  }

  advance(ms: number): void {
    this.rebase();
    this.baseSim += ms;
  }

  setSpeed(speed: number): void {
    checkSpeed(speed);
    this.rebase();
    this.speed = speed;
  }

  private rebase(): void {
    this.baseSim = this.now();
    this.baseReal = this.realNow();
  }
}
