import type { Result, Router } from "hono/router";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { SmartRouter } from "hono/router/smart-router";
import { TrieRouter } from "hono/router/trie-router";

/**
 * How many method + path matches are kept. A match is the list of the handlers that apply (every
 * `app.use` middleware's and the route's, ~15 for a gateway route) with their params: ~1–2 KB, so
 * the bound keeps at most a few MB, while a client's working set of paths (the cheeses it reads, the
 * orders it follows) fits; a path asked once (a scan of ids, a probe) only pushes out the least
 * recently used.
 */
const MAX_MATCHES = 2_000;
/** Longer paths are matched every time: they are rare, and would make a kept key costly. */
const MAX_PATH_LENGTH = 256;

/**
 * Hono's router (a `SmartRouter` over the `RegExpRouter` and the `TrieRouter`, as `new Hono()`
 * makes it) with each method + path's match kept, least recently used out. The gateway's routes
 * put a static segment beside a parameter (`/cheeses/findByStatus`, `/cheeses/:cheeseId`), which
 * the `RegExpRouter` refuses, so Hono falls back to the trie, whose match walks every middleware's
 * node and sorts the handlers on every request.
 *
 * A match is handed out again as it is: Hono and the gateway only read it (params are decoded
 * per request by `c.req.param()` into a new object; the request's position in the handlers is the
 * request's own `routeIndex`), and the trie builds a new result and new params on every match.
 */
export class MatchCache<T> implements Router<T> {
  private readonly matches = new Map<string, Result<T>>();

  constructor(
    private readonly router: Router<T> = new SmartRouter<T>({
      routers: [new RegExpRouter<T>(), new TrieRouter<T>()],
    }),
    private readonly maxMatches = MAX_MATCHES,
  ) {}

  get name(): string {
    return `MatchCache + ${this.router.name}`;
  }

  add(method: string, path: string, handler: T): void {
    this.matches.clear();
    this.router.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    if (path.length > MAX_PATH_LENGTH) return this.router.match(method, path);
    const key = `${method} ${path}`;
    const kept = this.matches.get(key);
    if (kept) {
      // Most recently used last: eviction takes the first.
      this.matches.delete(key);
      this.matches.set(key, kept);
      return kept;
    }
    const result = this.router.match(method, path);
    this.matches.set(key, result);
    if (this.matches.size > this.maxMatches) this.matches.delete(this.matches.keys().next().value!);
    return result;
  }

  /** How many matches are kept (for tests). */
  get size(): number {
    return this.matches.size;
  }
}
