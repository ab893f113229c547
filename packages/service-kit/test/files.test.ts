import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { publishFile, readOrCreateFile, replaceFile } from "../src/files.ts";

describe("files created once", () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir("files");
  });
  afterEach(() => dir.remove());

  it("publishes a file once and refuses to replace it, leaving no temporary files", () => {
    const file = join(dir.path, "keys", "a.key");
    publishFile(file, "first");
    expect(() => publishFile(file, "second")).toThrow(expect.objectContaining({ code: "EEXIST" }));
    expect(readFileSync(file, "utf8")).toBe("first");
    expect(readdirSync(join(dir.path, "keys"))).toEqual(["a.key"]);
  });

  it("gives every reader the contents the first creator wrote", () => {
    const file = join(dir.path, "shared.secret");
    let made = 0;
    const make = () => `value-${++made}`;
    const results = [
      readOrCreateFile(file, make),
      readOrCreateFile(file, make),
      readOrCreateFile(file, make),
    ];
    expect(made).toBe(1);
    expect(results.map((r) => r.toString())).toEqual(["value-1", "value-1", "value-1"]);
  });
});

describe("a file replaced whole", () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir("files");
  });
  afterEach(() => dir.remove());

  it("replaces the contents, creating the directory, and leaves no temporary files", () => {
    const file = join(dir.path, "run", "processes.json");
    replaceFile(file, "first");
    replaceFile(file, "second");
    expect(readFileSync(file, "utf8")).toBe("second");
    expect(readdirSync(join(dir.path, "run"))).toEqual(["processes.json"]);
  });

  it("is never seen half-written by a reader in another thread", async () => {
    const file = join(dir.path, "status.json");
    const record = (n: number) => JSON.stringify({ n, padding: "x".repeat(256 * 1024) });
    replaceFile(file, record(0));
    // The reader parses the file as fast as it can until told to stop, and reports what failed.
    const reader = new Worker(
      `const { parentPort, workerData } = require("node:worker_threads");
       const { readFileSync } = require("node:fs");
       let stop = false, reads = 0, torn = 0;
       parentPort.on("message", () => { stop = true; });
       const loop = () => {
         for (let i = 0; i < 50; i++) {
           try { JSON.parse(readFileSync(workerData, "utf8")); } catch { torn++; }
           reads++;
         }
         if (stop) parentPort.postMessage({ reads, torn }); else setImmediate(loop);
       };
       parentPort.postMessage("reading");
       loop();`,
      { eval: true, workerData: file },
    );
    const messages: unknown[] = [];
    const next = () => new Promise((resolve) => reader.once("message", resolve));
    messages.push(await next());
    for (let n = 1; n <= 200; n++) replaceFile(file, record(n));
    const done = next();
    reader.postMessage("stop");
    const { reads, torn } = (await done) as { reads: number; torn: number };
    await reader.terminate();
    expect(messages).toEqual(["reading"]);
    expect(reads).toBeGreaterThan(0);
    expect(torn).toBe(0);
    expect(JSON.parse(readFileSync(file, "utf8")).n).toBe(200);
  });
});
