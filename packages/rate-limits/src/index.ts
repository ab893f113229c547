export * from "./address.ts";
export * from "./plan-limits.ts";
export * from "./shared-buckets.ts";
export * from "./token-bucket.ts";
