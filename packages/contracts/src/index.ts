export * from "./cheese.ts";
export * from "./errors.ts";
export * from "./rpc/catalogue.ts";
