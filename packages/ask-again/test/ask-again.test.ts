import { describe, expect, it } from "vitest";
import { askAgain } from "../src/index.ts";

class NotYet extends Error {}

/** An ask that fails with `NotYet` its first `failures` times, then answers; it counts its asks. */
function answersAfter(failures: number) {
  const asked: number[] = [];
  const ask = async () => {
    asked.push(performance.now());
    if (asked.length <= failures) throw new NotYet(`not yet (${asked.length})`);
    return "answer";
  };
  return { ask, asked };
}

describe("askAgain", () => {
  it("asks again, a pause apart, while the failure is one to ask again for, and answers then", async () => {
    const { ask, asked } = answersAfter(2);
    const retried: string[] = [];
    const answer = await askAgain(ask, {
      pauseMs: 20,
      retryOn: (error) => error instanceof NotYet,
      onRetry: (error) => retried.push(error.message),
    });
    expect(answer).toBe("answer");
    expect(asked).toHaveLength(3);
    expect(asked[2]! - asked[0]!).toBeGreaterThanOrEqual(38);
    expect(retried).toEqual(["not yet (1)", "not yet (2)"]);
  });

  it("throws any other failure at once", async () => {
    let asked = 0;
    const refused = askAgain(
      async () => {
        asked++;
        throw new Error("refused");
      },
      { pauseMs: 20, retryOn: (error) => error instanceof NotYet },
    );
    await expect(refused).rejects.toThrow("refused");
    expect(asked).toBe(1);
  });

  it("gives up after its tries, with the last failure", async () => {
    const { ask, asked } = answersAfter(10);
    await expect(askAgain(ask, { pauseMs: 1, tries: 3, retryOn: () => true })).rejects.toThrow("not yet (3)");
    expect(asked).toHaveLength(3);
  });

  it("gives up once its time is over, with the last failure", async () => {
    const { ask, asked } = answersAfter(Number.POSITIVE_INFINITY);
    const started = performance.now();
    await expect(askAgain(ask, { pauseMs: 10, forMs: 100, retryOn: () => true })).rejects.toBeInstanceOf(
      NotYet,
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(95);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(asked.length).toBeGreaterThan(3);
  });
});
