import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import type { AttemptResult } from "../domain/delivery.ts";
import {
  CREDENTIALS_PROBLEM,
  forbiddenAddressReason,
  guardedLookup,
  type Resolver,
} from "../security/address-policy.ts";

export interface SendOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
  /** Name resolution for the SSRF guard (tests); the system resolver by default. */
  resolve?: Resolver;
}

/**
 * One attempt: POST the exact body, succeed only on a 2xx within the deadline. Redirects are not
 * followed (a 3xx is a failure). The deadline covers connecting, sending and the status line of the answer.
 * Unless private URLs are allowed, the address is checked again now, at connect time.
 */
export function sendAttempt(options: SendOptions): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const fail = (error: string, statusCode: number | null = null): AttemptResult => ({
    ok: false,
    statusCode,
    error,
    durationMs: elapsed(),
  });

  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    return Promise.resolve(fail("the registration's URL is not valid"));
  }
  if (url.username || url.password) return Promise.resolve(fail(`refused: URL ${CREDENTIALS_PROBLEM}`));
  if (!options.allowPrivate) {
    if (url.protocol !== "https:") return Promise.resolve(fail("refused: URL is not https"));
    // Literal addresses never reach `lookup`, so they are judged here.
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const reason = isIP(host) ? forbiddenAddressReason(host) : undefined;
    if (reason) return Promise.resolve(fail(`refused: ${reason} address ${host}`));
  }

  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const req = send(url, {
      method: "POST",
      headers: { ...options.headers, "content-length": String(Buffer.byteLength(options.body)) },
      agent: false,
      ...(options.allowPrivate ? {} : { lookup: guardedLookup(options.resolve) }),
    });
    const timer = setTimeout(() => {
      finish(fail(`timed out after ${options.timeoutMs} ms`));
      req.destroy();
    }, options.timeoutMs);

    // The status line decides; the answer's body is not needed, so the connection is closed.
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300)
        finish({ ok: true, statusCode: status, error: null, durationMs: elapsed() });
      else if (status >= 300 && status < 400) finish(fail(`redirect (${status}) not followed`, status));
      else finish(fail(`receiver answered ${status}`, status));
      res.destroy();
    });
    req.on("error", (error: NodeJS.ErrnoException) => {
      const reason = error.name === "ForbiddenAddressError" ? `refused: ${error.message}` : describe(error);
      finish(fail(reason));
    });
    req.end(options.body);
  });
}

function describe(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host name does not resolve";
    case "ECONNRESET":
      return "connection reset";
    default:
      return error.code ? `${error.code}: ${error.message}` : error.message;
  }
}
