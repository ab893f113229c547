/**
 * What a process that only starts and supervises others needs (the launcher): configuration,
 * logging, files, ports, closing a connection without losing its answer, and the process lifecycle, without the stores, the bus, metrics or
 * tracing the rest of the kit loads. `@cheese/service-kit/launch`.
 */
export * from "./config.ts";
export * from "./duration.ts";
export * from "./files.ts";
export * from "./linger.ts";
export * from "./logger.ts";
export * from "./ports.ts";
export * from "./process.ts";
