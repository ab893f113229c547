import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "@cheese/service-kit/launch";
import { tempDir } from "@cheese/testing";
import { afterEach, describe, expect, it } from "vitest";
import { Supervisor } from "../src/supervisor.ts";

/** A process as the launcher runs one: it prints to standard error, then exits or runs on. */
const node = (script: string): ChildProcess =>
  spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "pipe"], detached: true });

describe("the launcher's supervisor", () => {
  const data = tempDir("supervisor");
  let supervisor: Supervisor | undefined;
  afterEach(async () => {
    await supervisor?.stop(2_000);
    data.remove();
  });

  it("says in its 'process exited' record what the process last printed on standard error", async () => {
    mkdirSync(join(data.path, "run"), { recursive: true });
    const records: Record<string, unknown>[] = [];
    const logger = {
      error: (fields: Record<string, unknown>, msg: string) => records.push({ ...fields, msg }),
      info: () => {},
      warn: () => {},
    } as unknown as Logger;
    supervisor = new Supervisor({
      env: {},
      dataDir: data.path,
      nats: [
        {
          name: "nats-1",
          url: "nats://127.0.0.1:1",
          // Fails its start as a service does: its error over several lines, then exit 1.
          process: node(
            "console.error('starting'); console.error(new Error('wrong last sequence').stack.split('\\n').slice(0, 2).join('\\n')); process.exit(1)",
          ),
          respawn: () => node("setInterval(() => {}, 1000)"),
        },
      ],
      write: () => {},
      logger,
      onConfigError: () => {},
    });
    await expect.poll(() => records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      process: "nats-1",
      exit: 1,
      restartInMs: 250,
      msg: "process exited",
      stderr: expect.stringMatching(/^starting\nError: wrong last sequence\n {4}at /),
    });
  });
});
