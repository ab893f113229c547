/** The slice of a pino logger the adapters use; pass the process logger, or get console output. */
export interface BusLogger {
  info(details: Record<string, unknown>, message: string): void;
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export const consoleLogger: BusLogger = {
  info: (details, message) => console.info(message, details),
  warn: (details, message) => console.warn(message, details),
  error: (details, message) => console.error(message, details),
};

export const silentLogger: BusLogger = { info: () => {}, warn: () => {}, error: () => {} };
