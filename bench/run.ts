/** `pnpm bench`: the embedded adapters on their own, then the whole system over HTTP. */
await import("./adapters.ts");
await import("./http.ts");
