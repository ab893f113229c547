/**
 * One load window with autocannon: `connections` connections, each sending its next request as
 * soon as the previous one is answered, for `seconds`. Latencies of 2xx answers are kept exactly
 * (autocannon's own histogram counts whole milliseconds, too coarse for the baseline).
 */
import { loadavg } from "node:os";
import autocannon from "autocannon";
import { percentiles } from "./percentiles.ts";
import type { BenchRequest } from "./scenario.ts";

export interface LoadResult {
  /** 2xx answers per second over the window. */
  okPerSecond: number;
  ok: number;
  /** Answers other than 2xx, by status; `errors` counts connection errors and timeouts. */
  non2xx: Record<string, number>;
  errors: number;
  p50: number;
  p95: number;
  p99: number;
  seconds: number;
  /** The 1-minute load average when the window ended. */
  load: number;
}

export async function runLoad(options: {
  url: string;
  connections: number;
  seconds: number;
  /** The next request; called once per request sent. */
  next: () => BenchRequest;
}): Promise<LoadResult> {
  const latencies: number[] = [];
  let instance: autocannon.Instance;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.seconds,
        timeout: 10,
        requests: [
          {
            setupRequest: (request) => {
              const { method, path, body, headers } = options.next();
              return {
                ...request,
                method,
                path,
                body,
                headers: {
                  ...request.headers,
                  ...(body ? { "content-type": "application/json" } : {}),
                  ...headers,
                },
              };
            },
          },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
  instance!.on("response", (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
  const result = await done;
  const at = percentiles(latencies);
  const non2xx: Record<string, number> = {};
  for (const [status, { count }] of Object.entries(result.statusCodeStats ?? {})) {
    if (!status.startsWith("2")) non2xx[status] = Number(count);
  }
  return {
    okPerSecond: latencies.length / result.duration,
    ok: latencies.length,
    non2xx,
    errors: result.errors,
    p50: at(0.5),
    p95: at(0.95),
    p99: at(0.99),
    seconds: result.duration,
    load: loadavg()[0]!,
  };
}
