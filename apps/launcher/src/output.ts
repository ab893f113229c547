import type { Readable } from "node:stream";
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

/**
 * Writes what a process printed, labelled with the process it came from: one line, or several
 * whole lines joined by "\n" (no newline after the last), as they arrived together.
 */
export type LineWriter = (from: LineSource, lines: string, stream: "stdout" | "stderr") => void;

/**
 * How the processes' lines reach the launcher's own stdout and stderr. For a log shipper (stdout
 * not a terminal) every line passes unchanged, the lines that arrived together in one write
 * (each service's stdout is its pino JSON, which names the service; the gateway prints an access
 * line per request, and a write per line cost the launcher a tenth of what a cached get costs
 * the gateway). On a terminal, JSON lines are pretty-printed and every line is prefixed with the
 * process it came from (`[catalogue]`, `[gateway#2]`), or, from a process running
 * several services, with the service the line names (`[customer]`). The pretty printer is loaded
 * only for a terminal: the launcher of a log shipper stays small.
 */
export async function createLineWriter(terminal = process.stdout.isTTY === true): Promise<LineWriter> {
  if (!terminal) {
    return (_source, lines, stream) => process[stream].write(`${lines}\n`);
  }
  const { prettyFactory } = await import("pino-pretty");
  const pretty = prettyFactory({
    colorize: true,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,service",
    singleLine: true,
  });
  const one = (source: LineSource, line: string) => {
    let text = line.endsWith("\r") ? line.slice(0, -1) : line;
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
    return `${prefix}${text.replaceAll("\n", `\n${prefix}`)}\n`;
  };
  return (source, lines, stream) => {
    let out = "";
    for (const line of lines.split("\n")) out += one(source, line);
    process[stream].write(out);
  };
}

/**
 * Calls `write` with the whole lines of `input` (a process's stdout) as they arrive: everything up
 * to the last newline of what has come, one call per chunk rather than per line; a last line
 * without a newline when the stream ends.
 */
export function onWholeLines(input: Readable, write: (lines: string) => void): void {
  let rest = "";
  input.setEncoding("utf8");
  input.on("data", (chunk: string) => {
    const end = chunk.lastIndexOf("\n");
    if (end === -1) {
      rest += chunk;
      return;
    }
    write(rest + chunk.slice(0, end));
    rest = chunk.slice(end + 1);
  });
  input.on("end", () => {
    if (rest) write(rest);
    rest = "";
  });
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
