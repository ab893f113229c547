import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { publishFile, readOrCreateFile } from "../src/files.ts";

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
