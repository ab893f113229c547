import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLineWriter, lineDestination, onWholeLines } from "../src/output.ts";

/** What `pnpm start` shows on a terminal: each line prefixed with where it came from. */
describe("the launcher's output on a terminal", () => {
  const written: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    written.length = 0;
  });
  const capture = () =>
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
  const record = (service: string, msg: string) =>
    JSON.stringify({ level: 30, time: Date.parse("2026-11-24T09:00:00Z"), service, msg });

  it("names a line of a process running several services by the service the line names, with the replica", async () => {
    const write = await createLineWriter(true);
    capture();
    const shared = {
      label: "ordering+customer+notification",
      services: ["ordering", "customer", "notification"],
    };
    write(shared, record("customer", "ready"), "stdout");
    write({ ...shared, label: `${shared.label}#2`, replica: 2 }, record("notification", "ready"), "stdout");
    write(shared, "not JSON", "stdout");
    expect(written.map((line) => line.split(" ")[0])).toEqual([
      "[customer]",
      "[notification#2]",
      "[ordering+customer+notification]",
    ]);
  });

  it("names a line of a process of one service by the process, whatever its label holds", async () => {
    const write = await createLineWriter(true);
    capture();
    write({ label: "gateway#3", services: ["gateway"], replica: 3 }, record("gateway", "ready"), "stdout");
    // A label is a name, not a convention: a "+" in it does not make the process a group.
    write({ label: "cata+logue", services: ["catalogue"] }, record("catalogue", "ready"), "stdout");
    lineDestination("launcher", write).write(`${record("launcher", "started")}\n`);
    expect(written.map((line) => line.split(" ")[0])).toEqual(["[gateway#3]", "[cata+logue]", "[launcher]"]);
  });

  it("passes every line unchanged to a log shipper", async () => {
    const write = await createLineWriter(false);
    capture();
    const line = record("customer", "ready");
    write({ label: "ordering+customer+notification", services: ["ordering", "customer"] }, line, "stdout");
    expect(written).toEqual([`${line}\n`]);
  });
});

/** What a process prints reaches the launcher in chunks that need not end at a line's end. */
describe("a process's output, line by line", () => {
  it("hands on every whole line once, the lines of a chunk together, and the last one at the end", async () => {
    const input = new PassThrough();
    const calls: string[] = [];
    onWholeLines(input, (lines) => calls.push(lines));
    const ended = new Promise((resolve) => input.once("end", resolve));
    input.write("first\nsec");
    input.write("ond\nthird\n");
    // "é" split between two chunks: decoded whole.
    const accent = Buffer.from("é");
    input.write(Buffer.concat([Buffer.from("fourth "), accent.subarray(0, 1)]));
    input.write(Buffer.concat([accent.subarray(1), Buffer.from("\nno newline")]));
    input.end();
    await ended;
    expect(calls).toEqual(["first", "second\nthird", "fourth é", "no newline"]);
    expect(calls.join("\n").split("\n")).toEqual(["first", "second", "third", "fourth é", "no newline"]);
  });

  /** What `write` puts on the launcher's stdout for `lines` from the gateway. */
  async function writtenFor(terminal: boolean, lines: string): Promise<string[]> {
    const write = await createLineWriter(terminal);
    const written: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    write({ label: "gateway", services: ["gateway"] }, lines, "stdout");
    vi.restoreAllMocks();
    return written;
  }

  it("writes the lines that came together in one write for a log shipper", async () => {
    expect(await writtenFor(false, '{"a":1}\n{"a":2}')).toEqual(['{"a":1}\n{"a":2}\n']);
  });

  it("prefixes each of them on a terminal", async () => {
    expect((await writtenFor(true, "one\r\ntwo")).join("")).toBe("[gateway] one\n[gateway] two\n");
  });
});
