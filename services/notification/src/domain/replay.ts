import { validationFailed } from "@cheese/service-kit";

/**
 * The window as the stored `createdAt` values are written (UTC, milliseconds), so that comparing
 * strings compares times whatever offset the caller used.
 */
export function replayWindow(since?: string, until?: string): { since?: string; until?: string } {
  const utc = (value: string | undefined) =>
    value === undefined ? undefined : new Date(value).toISOString();
  const window: { since?: string; until?: string } = {};
  const from = utc(since);
  const to = utc(until);
  if (from) window.since = from;
  if (to) window.until = to;
  return window;
}

/** A replay is bounded per call: more matching deliveries than `max` is a 422 saying how many. */
export function checkReplayBound(matching: number, max: number): void {
  if (matching <= max) return;
  throw validationFailed("request body failed validation", [
    {
      field: "since",
      message: `${matching} deliveries match; one replay may start at most ${max}: narrow since/until`,
    },
  ]);
}
