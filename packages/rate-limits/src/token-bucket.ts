/**
 * Token-bucket arithmetic, pure. A bucket holds up to `burst` tokens and gains `perHour` tokens
 * an hour, continuously; a request takes one. `perHour: "unlimited"` (enterprise) refills a full
 * burst every second: no hourly cap, yet never more than `burst` requests at once. A bucket of
 * one (`burst: 1`, {@link perSecond}) spaces requests evenly: one every `1000 / n` ms, no burst
 * (GCRA without a burst tolerance).
 */
export interface PlanLimits {
  burst: number;
  perHour: number | "unlimited";
}

export interface BucketState {
  tokens: number;
  /** When `tokens` was computed, epoch ms. */
  at: number;
}

export interface Admission {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until a token is available (for Retry-After); 0 when allowed. */
  retryAfterSeconds: number;
  /** Milliseconds until a token is available (when to ask again); 0 when allowed. */
  retryAfterMs: number;
}

export function refillPerMs(limits: PlanLimits): number {
  return limits.perHour === "unlimited" ? limits.burst / 1000 : limits.perHour / 3_600_000;
}

/** The hourly rate shown in X-Rate-Limit; "unlimited" shows what a burst a second adds up to. */
export function hourlyRate(limits: PlanLimits): number {
  return limits.perHour === "unlimited" ? limits.burst * 3600 : limits.perHour;
}

/** Tokens in the bucket at `now`; a bucket never seen is full. */
export function tokensAt(state: BucketState | undefined, limits: PlanLimits, now: number): number {
  if (!state) return limits.burst;
  const elapsed = Math.max(0, now - state.at);
  return Math.min(limits.burst, state.tokens + elapsed * refillPerMs(limits));
}

/**
 * Admits up to `count` requests in order from the bucket at `now`: the first ones while whole
 * tokens last, the rest refused. Returns each request's admission and the new state.
 */
export function take(
  state: BucketState | undefined,
  limits: PlanLimits,
  now: number,
  count: number,
): { admissions: Admission[]; state: BucketState } {
  let tokens = tokensAt(state, limits, now);
  const rate = refillPerMs(limits);
  const admissions: Admission[] = [];
  for (let i = 0; i < count; i++) {
    const allowed = tokens >= 1;
    if (allowed) tokens -= 1;
    admissions.push({
      allowed,
      remaining: Math.floor(tokens),
      resetSeconds: Math.ceil((limits.burst - tokens) / rate / 1000),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / rate / 1000)),
      // Less a nanosecond of floating-point noise, so a whole interval stays whole (500 ms, not 501).
      retryAfterMs: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / rate - 1e-6)),
    });
  }
  return { admissions, state: { tokens, at: now } };
}

/** A rate of `n` a second with no burst: requests at least `1000 / n` ms apart. */
export function perSecond(n: number): PlanLimits {
  return { burst: 1, perHour: n * 3600 };
}
