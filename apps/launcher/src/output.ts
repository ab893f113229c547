import type { DestinationStream } from "@cheese/service-kit/launch";

/** The process a line came from. */
export interface LineSource {
  /** Its prefix on a terminal: `catalogue`, `gateway#2`, `ordering+customer+notification`. */
  label: string;
  /** The services it runs: when several, a JSON line is prefixed with the one it names instead. */
  services: readonly string[];
  /** Its replica number when the service runs several (kept in a per-service prefix). */
  replica?: number;
}

/** Writes one line a process printed, labelled with the process it came from. */
export type LineWriter = (from: LineSource, line: string, stream: "stdout" | "stderr") => void;

/**
 * How the processes' lines reach the launcher's own stdout and stderr. For a log shipper (stdout
 * not a terminal) every line passes unchanged: each service's stdout is its pino JSON, which
 * names the service. On a terminal, JSON lines are pretty-printed and every line is prefixed
 * with the process it came from (`[catalogue]`, `[gateway#2]`), or, from a process running
 * several services, with the service the line names (`[customer]`). The pretty printer is loaded
 * only for a terminal: the launcher of a log shipper stays small.
 */
export async function createLineWriter(terminal = process.stdout.isTTY === true): Promise<LineWriter> {
  if (!terminal) {
    return (_source, line, stream) => process[stream].write(`${line}\n`);
  }
  const { prettyFactory } = await import("pino-pretty");
  const pretty = prettyFactory({
    colorize: true,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,service",
    singleLine: true,
  });
  return (source, line, stream) => {
    let text = line;
    let from = source.label;
    if (line.startsWith("{")) {
      try {
        const record = JSON.parse(line);
        text = pretty(record).trimEnd();
        if (source.services.length > 1 && typeof record.service === "string") {
          from = source.replica === undefined ? record.service : `${record.service}#${source.replica}`;
        }
      } catch {
        // not JSON after all: as it came
      }
    }
    const prefix = `[${from}] `;
    process[stream].write(`${prefix}${text.replaceAll("\n", `\n${prefix}`)}\n`);
  };
}

/** A pino destination that hands each line to `write` under `label` (the launcher's own logs). */
export function lineDestination(label: string, write: LineWriter): DestinationStream {
  const source: LineSource = { label, services: [] };
  return {
    write(chunk: string) {
      for (const line of chunk.split("\n")) if (line) write(source, line, "stdout");
    },
  };
}
