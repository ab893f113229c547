import createClient, { type Client, type Middleware } from "openapi-fetch";
import { type Auth, credentials } from "./auth.ts";
import { CheeseApiError } from "./errors.ts";
import type { paths } from "./generated/openapi.ts";
import { defaultServer, idempotentWrites, pathServers } from "./generated/operations.ts";

export interface CheeseClientOptions {
  /**
   * The gateway's address, without `/v2`: `https://cheese.example.com`. Every operation is
   * reached from it: the API under `/v2`, the authorization server (`/oauth/...`) at the root,
   * as the document's servers say.
   */
  baseUrl: string;
  auth?: Auth;
  /** Headers sent with every request (a `User-Agent`, an `X-Request-Id`, ...). */
  headers?: Record<string, string>;
  /**
   * Retries of an answer 429 or 503, or of a request that never got an answer, for requests that
   * are safe to repeat: reads, and writes carrying an Idempotency-Key (the repeat answers what
   * the first did). Waits Retry-After when given, else 0.5 s, 1 s, 2 s, ... Default 2; 0 never.
   */
  retries?: number;
  /** Longest wait between two attempts, in milliseconds (default 10 000). */
  maxRetryDelayMs?: number;
  /** Makes the Idempotency-Key of a write that did not set one (default: a random UUID). */
  idempotencyKey?: () => string;
  /** The fetch to use (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
}

/** Paths whose GET answers a page: `{items, nextCursor}`. */
export type ListPath = {
  [P in keyof paths]: paths[P] extends {
    get: {
      responses: {
        200: { content: { "application/json": { items: unknown[]; nextCursor: string | null } } };
      };
    };
  }
    ? P
    : never;
}[keyof paths];

type ListOperation<P extends ListPath> = paths[P]["get"];
/** One element of the pages of `P`. */
export type ItemOf<P extends ListPath> =
  ListOperation<P> extends {
    responses: { 200: { content: { "application/json": { items: (infer I)[] } } } };
  }
    ? I
    : never;
type ParametersOf<P extends ListPath> = ListOperation<P> extends { parameters: infer Q } ? Q : never;
/** What a list takes besides its cursor: path parameters, filters, `limit` (the page size). */
export type ListParams<P extends ListPath> = {
  [K in keyof ParametersOf<P> as K extends "query"
    ? K
    : ParametersOf<P>[K] extends undefined
      ? never
      : K]?: K extends "query" ? Omit<NonNullable<ParametersOf<P>[K]>, "cursor"> : ParametersOf<P>[K];
};

export interface CheeseClient extends Client<paths> {
  /**
   * Every item of a paginated list, page after page (following `nextCursor`) as the loop asks:
   * `for await (const cheese of client.paginate("/cheeses", { query: { status: "available" } }))`.
   * A page that fails throws `CheeseApiError`.
   */
  paginate<P extends ListPath>(path: P, params?: ListParams<P>): AsyncGenerator<ItemOf<P>, void, undefined>;
}

/**
 * openapi-fetch takes a replaced answer only as an instance of the global Response, which some
 * servers in the same process swap for their own class (@hono/node-server does).
 */
function asResponse(response: Response): Response {
  if (response instanceof Response) return response;
  const { body, status, statusText, headers } = response as Response;
  return new Response(body, { status, statusText, headers });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const safeMethods = new Set(["GET", "HEAD", "OPTIONS"]);

/** The Cheese Store API, typed from its OpenAPI document. */
export function createCheeseClient(options: CheeseClientOptions): CheeseClient {
  const origin = options.baseUrl.replace(/\/+$/, "");
  const serverUrl = (server: string) => `${origin}${server === "/" ? "" : server.replace(/\/+$/, "")}`;
  const fetchImpl = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const retries = options.retries ?? 2;
  const maxDelay = options.maxRetryDelayMs ?? 10_000;
  const newKey = options.idempotencyKey ?? (() => crypto.randomUUID());
  const auth = credentials(
    options.auth,
    `${serverUrl(pathServers["/oauth/token"] ?? "/")}/oauth/token`,
    fetchImpl,
    Date.now,
  );

  const client = createClient<paths>({
    baseUrl: serverUrl(defaultServer),
    fetch: fetchImpl,
    ...(options.headers ? { headers: options.headers } : {}),
  });

  /** Requests as sent, to send again (a retry, or a refused token replaced). */
  const sent = new Map<string, Request>();

  const middleware: Middleware = {
    async onRequest({ request, schemaPath, id }) {
      // A request that names its own credentials (the token request's Basic) keeps them.
      if (!request.headers.has("authorization") && !request.headers.has("x-api-key")) {
        for (const [name, value] of Object.entries(await auth.headers())) request.headers.set(name, value);
      }
      if (
        idempotentWrites.has(`${request.method} ${schemaPath}`) &&
        !request.headers.has("idempotency-key")
      ) {
        request.headers.set("Idempotency-Key", newKey());
      }
      sent.set(id, request.clone());
      return request;
    },
    async onResponse({ response, id }) {
      const original = sent.get(id);
      sent.delete(id);
      if (!original) return response;
      let answer = response;
      if (answer.status === 401 && auth.refused()) {
        const again = original.clone();
        for (const [name, value] of Object.entries(await auth.headers())) again.headers.set(name, value);
        answer = await fetchImpl(again);
      }
      for (
        let attempt = 1;
        attempt <= retries && repeatable(original) && [429, 503].includes(answer.status);
        attempt++
      ) {
        await sleep(delay(answer, attempt));
        answer = await fetchImpl(original.clone());
      }
      return answer === response ? undefined : asResponse(answer);
    },
    async onError({ error, id }) {
      const original = sent.get(id);
      sent.delete(id);
      if (!original || !repeatable(original)) return;
      for (let attempt = 1; attempt <= retries; attempt++) {
        await sleep(delay(undefined, attempt));
        try {
          return asResponse(await fetchImpl(original.clone()));
        } catch (next) {
          if (attempt === retries) return next instanceof Error ? next : new Error(String(next ?? error));
        }
      }
    },
  };
  client.use(middleware);

  const repeatable = (request: Request) =>
    safeMethods.has(request.method) || request.headers.has("idempotency-key");
  const delay = (response: Response | undefined, attempt: number) => {
    const retryAfter = Number(response?.headers.get("retry-after"));
    const wanted =
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : 500 * 2 ** (attempt - 1);
    return Math.min(wanted, maxDelay);
  };

  // Paths on another server than the API's (the authorization server at the root) get its URL.
  const methods = ["GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"] as const;
  const routed = { ...client } as Record<string, unknown>;
  for (const method of methods) {
    const call = client[method] as (path: string, init?: object) => Promise<unknown>;
    routed[method] = (path: string, init?: object) => {
      const server = pathServers[path];
      return call(path, server === undefined ? init : { ...init, baseUrl: serverUrl(server) });
    };
  }

  const request = client.request as (method: string, path: string, init?: object) => Promise<unknown>;
  routed.request = (method: string, path: string, init?: object) => {
    const server = pathServers[path];
    return request(method, path, server === undefined ? init : { ...init, baseUrl: serverUrl(server) });
  };

  async function* paginate<P extends ListPath>(path: P, params?: ListParams<P>) {
    const get = routed.GET as (
      path: string,
      init: object,
    ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
    const given = (params ?? {}) as { query?: Record<string, unknown> };
    let cursor: string | null | undefined;
    do {
      const query = cursor ? { ...given.query, cursor } : given.query;
      const result = await get(path, { params: { ...given, ...(query ? { query } : {}) } });
      if (result.error !== undefined || !result.response.ok)
        throw new CheeseApiError(result.response, result.error);
      const page = result.data as { items: ItemOf<P>[]; nextCursor: string | null };
      yield* page.items;
      cursor = page.nextCursor;
    } while (cursor);
  }

  return { ...(routed as unknown as Client<paths>), paginate };
}
