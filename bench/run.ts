/**
 * `pnpm bench`: the embedded adapters on their own, the whole system over HTTP, then the
 * notification service's start-up with a million finished deliveries.
 */
await import("./adapters.ts");
await import("./http.ts");
await import("./webhook-startup.ts");
