import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as it arrived, with the raw body bytes (signatures are over these). */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  /** The raw body as UTF-8 text. */
  body: string;
  /** `Date.now()` when the request had fully arrived. */
  receivedAt: number;
}

/** How a path answers: a status after an optional delay, or once a barrier is passed. */
export interface Behaviour {
  status?: number;
  delayMs?: number;
  /** Answers only once this settles (a barrier the test opens), then after `delayMs` if any. */
  until?: Promise<unknown>;
  headers?: Record<string, string>;
  /** The answer's body ("ok" unless given). */
  body?: string;
}

type Answer = Behaviour | ((request: ReceivedRequest, countOnPath: number) => Behaviour);

/**
 * A real HTTP webhook receiver (on 127.0.0.1 unless told otherwise): records every request with its raw body and answers
 * each path as configured (200 at once by default).
 */
export class Receiver {
  private readonly received: ReceivedRequest[] = [];
  private readonly answers = new Map<string, Answer>();
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly server: Server,
    readonly baseUrl: string,
  ) {}

  /** Listens on `host` (loopback by default; a cluster's bridge address for hosts in namespaces). */
  static async start(host = "127.0.0.1"): Promise<Receiver> {
    let receiver: Receiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const rawBody = Buffer.concat(chunks);
        const request: ReceivedRequest = {
          method: req.method ?? "",
          path: new URL(req.url ?? "/", "http://receiver").pathname,
          headers: req.headers,
          rawBody,
          body: rawBody.toString("utf8"),
          receivedAt: Date.now(),
        };
        receiver!.record(request);
        const answer = receiver!.answerFor(request);
        const reply = () => {
          if (res.destroyed) return;
          res
            .writeHead(answer.status ?? 200, { "content-type": "text/plain", ...answer.headers })
            .end(answer.body ?? "ok");
        };
        const later = () => {
          if (answer.delayMs) setTimeout(reply, answer.delayMs).unref();
          else reply();
        };
        if (answer.until) void answer.until.then(later, later);
        else later();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    receiver = new Receiver(server, `http://${host}:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  url(path = "/"): string {
    return `${this.baseUrl}${path}`;
  }

  /** Sets how `path` answers from now on. */
  behave(path: string, answer: Answer): void {
    this.answers.set(path, answer);
  }

  /** Requests received so far, on one path or all. */
  requests(path?: string): ReceivedRequest[] {
    return this.received.filter((r) => path === undefined || r.path === path);
  }

  /** Waits until `path` has received at least `count` requests; throws after `timeoutMs`. */
  async waitFor(path: string, count: number, timeoutMs = 15_000): Promise<ReceivedRequest[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.requests(path).length < count) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `${path} received ${this.requests(path).length} of ${count} requests in ${timeoutMs} ms`,
        );
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.waiters.add(wake);
      });
    }
    return this.requests(path);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private record(request: ReceivedRequest): void {
    this.received.push(request);
    for (const wake of [...this.waiters]) wake();
  }

  private answerFor(request: ReceivedRequest): Behaviour {
    const answer = this.answers.get(request.path) ?? {};
    return typeof answer === "function" ? answer(request, this.requests(request.path).length) : answer;
  }
}

/** A delivery's envelope; `data` is loosely typed JSON, for assertions. */
export interface ReceivedEnvelope {
  id: string;
  type: string;
  created_at: string;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  data: any;
}

/** The parsed JSON envelope of a received delivery. */
export function envelopeOf(request: ReceivedRequest): ReceivedEnvelope {
  return JSON.parse(request.body);
}
