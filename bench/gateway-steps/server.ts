/**
 * One server of the gateway-steps experiment (`bench/gateway-steps/run.ts`): `GET
 * /v2/cheeses/:id` answering a fixed cheese's JSON from memory, behind the first `STEP` + 1
 * layers of the gateway's real request path (see `layers` below). The last step is the gateway's
 * own `createApp`, its bus answering the catalogue's `getCheese` at once from memory (no NATS):
 * what a get costs the gateway itself.
 */
import { mkdtempSync } from "node:fs";
import { IncomingMessage, type Server, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Duplex } from "node:stream";
import {
  CheeseIdParam,
  catalogueRpc,
  identityRpc,
  oauthClientsSchema,
  REVOCATIONS_BUCKET,
} from "@cheese/contracts";
import { createInProcessBroker, type MessageBus, PassedReply, serveRpc } from "@cheese/messaging";
import { SharedBuckets } from "@cheese/rate-limits";
import { createLogger, systemClock } from "@cheese/service-kit";
import { serve } from "@hono/node-server";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { ReadCache } from "../../services/catalogue/src/read-cache.ts";
import { CustomerDirectory } from "../../services/customer/src/directory.ts";
import { loadSigningKey } from "../../services/customer/src/handlers/identity/signing-key.ts";
import { TokenIssuer } from "../../services/customer/src/handlers/identity/tokens.ts";
import { KnownRevocations } from "../../services/customer/src/known-revocations.ts";
// The gateway's own copy (the bench's package does not depend on @hono/zod-openapi).
import { OpenAPIHono } from "../../services/gateway/node_modules/@hono/zod-openapi/dist/index.mjs";
import { createApp } from "../../services/gateway/src/app.ts";
import { authenticate } from "../../services/gateway/src/auth/authenticate.ts";
import { TokenVerifier } from "../../services/gateway/src/auth/tokens.ts";
import type { GatewayEnv } from "../../services/gateway/src/env.ts";
import { handleError } from "../../services/gateway/src/errors.ts";
import { bodySize, jsonDepth } from "../../services/gateway/src/middleware/body-size.ts";
import { observe } from "../../services/gateway/src/middleware/observe.ts";
import { rateLimit } from "../../services/gateway/src/middleware/rate-limit.ts";
import { type RouteDeps, route } from "../../services/gateway/src/routes/route.ts";
import { answerPassed } from "../../services/gateway/src/rpc.ts";
import { createGatewayServer } from "../../services/gateway/src/server.ts";
import { observeParts } from "./observe-parts.ts";

export const CHEESE = JSON.stringify({
  id: 5,
  name: "Brie de Meaux",
  description: "A soft cheese from the Île-de-France, its rind bloomy.",
  category: { id: 1, name: "soft" },
  origin: "France",
  status: "available",
  organic: false,
  tags: [{ id: 1, name: "creamy" }],
  photoUrls: [],
  createdAt: "2026-11-24T10:00:00.000Z",
  updatedAt: "2026-11-24T10:00:00.000Z",
});
const ETAG = '"3"';

const step = Number(process.env.STEP ?? 0);
/** `ROUTE=create`: `createApp`'s `POST /v2/cheeses`, the catalogue's `createCheese` answered from memory. */
const create = process.env.ROUTE === "create";
const logger = createLogger("gateway", "info");
const key = await loadSigningKey(join(mkdtempSync(join(tmpdir(), "gateway-steps-")), "key.json"));
const issuer = "http://127.0.0.1";
const signer = new TokenIssuer(key, systemClock);
const oauthClients = oauthClientsSchema.parse(
  JSON.stringify([
    { id: "ops", secret: "ops-secret", scopes: ["read:cheeses", "write:cheeses"], plan: "enterprise" },
  ]),
);
const { token } = await signer.issue(
  { kind: "client", sub: "ops", scopes: ["read:cheeses", "write:cheeses"] },
  3600,
  issuer,
);
const plans = {
  free: { burst: 10, perHour: 100 },
  pro: { burst: 100, perHour: 10_000 },
  enterprise: { burst: 1_000_000, perHour: "unlimited" as const },
};

/**
 * A bus on which the catalogue's `getCheese` answers at once, as a cache in the gateway would, and
 * its `createCheese` with a new cheese (the request encoded, as a bus sending it would).
 */
function answeringBus(): MessageBus {
  const bus = createInProcessBroker().connect("gateway");
  const got = new PassedReply({ revision: 3 }, CHEESE);
  const created = new PassedReply({ revision: 1, id: 5 }, CHEESE);
  const request = bus.request.bind(bus);
  bus.request = (subject, payload, options) => {
    if (subject === catalogueRpc.getCheese.subject) return Promise.resolve(got);
    if (subject === catalogueRpc.createCheese.subject) {
      JSON.stringify(payload);
      return Promise.resolve(created);
    }
    return request(subject, payload, options);
  };
  return bus;
}
const bus = answeringBus();
// The revocations bucket, as the customer service makes it (the gateway opens it read only).
await bus.kv(REVOCATIONS_BUCKET);
// The customer service's published keys, which the gateway verifies tokens against.
serveRpc(bus, identityRpc.jwks, { queue: "customer" }, async () => signer.jwks());
const auth = {
  tokens: new TokenVerifier(bus, issuer, 1000, systemClock),
  operatorKeys: new Map(),
  oauthClients,
  anonymousPlan: "free" as const,
  issuer,
};

/** The layers, in the order a request meets them; step N runs the first N + 1. */
const layers: [string, MiddlewareHandler<GatewayEnv> | undefined][] = [
  ["bare Hono (serve), c.header(ETag) + c.body(text)", undefined],
  ["createGatewayServer instead of serve", undefined],
  ["observe (request id, nosniff, span, access line, metrics)", observe(logger)],
  // `nosniff` is observe's: the step is kept, with no layer, so the later ones keep their numbers.
  ["noSniff (now observe's)", undefined],
  ["bodySize", bodySize()],
  [
    "authenticate (client-credentials token)",
    authenticate(auth, {
      revocations: new KnownRevocations(bus, logger, 1000, systemClock),
      customers: new CustomerDirectory(bus, 1000, logger),
    }),
  ],
  ["rateLimit", rateLimit({ plans, buckets: new SharedBuckets(bus, logger, systemClock) })],
  ["jsonDepth", jsonDepth],
  ["OpenAPIHono route: access rule, param check, answerPassed", undefined],
  ["createApp (every route; a get from its read cache)", undefined],
  // Off the line: bare Hono again, with the gateway's answer headers and header reads only.
  ["bare Hono + 7 more answer headers (c.header) and 3 request headers read", undefined],
  ["bare Hono, one answer header (plain object: no Headers either way)", undefined],
  // Off the line: observe's parts, each alone in front of the bare route (observe-parts.ts).
  ["observe's request id alone (read or made, set on the answer)", observeParts(logger, new Set(["ids"]))],
  ["observe's span alone (trace context read, span made and ended)", observeParts(logger, new Set(["span"]))],
  [
    "observe's metrics alone (route template, counter, histogram)",
    observeParts(logger, new Set(["metrics"])),
  ],
  ["observe's access line alone", observeParts(logger, new Set(["log"]))],
];

function app(): { fetch: (request: Request, env: unknown) => Response | Promise<Response> } {
  if (create && step !== 9) throw new Error("ROUTE=create runs step 9 (createApp) only");
  if (step === 10 || step === 11) return bareWithHeaders(step === 10);
  if (step >= 12) return bareBehind(layers[step]![1]!);
  if (step >= 9) return createApp({ ...deps(), readCache: readCache(), auth }, { rateLimits: plans });
  const hono = new Hono<GatewayEnv>();
  for (const [, layer] of layers.slice(0, step + 1)) if (layer) hono.use(layer);
  if (step >= 8) {
    hono.onError(handleError);
    const api = new OpenAPIHono<GatewayEnv>();
    const getCheese = route(
      {
        method: "get",
        path: "/cheeses/{cheeseId}",
        operationId: "getCheeseById",
        access: { apiKey: true, bearer: true, oauth: ["read:cheeses"] },
        request: { params: CheeseIdParam },
        responses: { 200: { description: "the cheese" } },
      },
      () => (c) => {
        c.req.valid("param");
        c.header("ETag", ETAG);
        return answerPassed(c, CHEESE, 200) as never;
      },
    );
    getCheese(api, {} as RouteDeps);
    hono.route("/v2", api);
  } else {
    hono.get("/v2/cheeses/:id", bareAnswer);
  }
  return hono;
}

/** The bare route's answer: the cheese with its ETag, as the baseline server answers it. */
const bareAnswer = (c: Context) => {
  c.header("ETag", ETAG);
  return c.body(CHEESE, 200, { "Content-Type": "application/json" });
};

function bareBehind(layer: MiddlewareHandler) {
  return new Hono().use(layer).get("/v2/cheeses/:id", bareAnswer);
}

function bareWithHeaders(many: boolean) {
  const hono = new Hono();
  hono.get("/v2/cheeses/:id", (c) => {
    if (!many) return c.body(CHEESE, 200, { "Content-Type": "application/json" });
    for (const name of ["x-request-id", "authorization", "if-none-match"]) c.req.header(name);
    c.header("X-Request-Id", "0f8c2c1e-3f5e-4a8e-9d6b-1c2d3e4f5a6b");
    for (const name of [
      "RateLimit-Limit",
      "RateLimit-Remaining",
      "RateLimit-Reset",
      "X-Rate-Limit",
      "X-Rate-Limit-Remaining",
    ])
      c.header(name, "1000");
    c.header("X-Content-Type-Options", "nosniff");
    c.header("ETag", ETAG);
    return c.body(CHEESE, 200, { "Content-Type": "application/json" });
  });
  return hono;
}

/**
 * The gateway's read cache, as `READ_CACHE=on` (the default) makes it: the first get asks the bus,
 * every later one is a hit (the in-process bus's follower is current), as a gateway holding its
 * read lease answers them. `READ_CACHE=off`: none, every get asks the bus.
 */
function readCache(): ReadCache | undefined {
  if (process.env.READ_CACHE === "off") return undefined;
  const cache = new ReadCache(bus, { maxBytes: 64 * 1024 * 1024, maxAgeMs: 3_600_000, clock: systemClock });
  cache.follow();
  return cache;
}

function deps() {
  return {
    bus,
    blobs: undefined as never,
    logger,
    clock: systemClock,
    rpcTimeoutMs: 1000,
    publicUrl: issuer,
  };
}

const { fetch } = app();
const ready = (port: number) => process.send?.({ port, token, layers: layers.map(([name]) => name) });
if (process.env.IN_PROCESS) {
  // `run.ts --in-process`: each `{ gets }` asked for handed to the server one after the other,
  // without sockets, answered with their CPU µs per get.
  const server = createGatewayServer((request, env) => fetch(request, env), { logger });
  process.on("message", (message: { gets: number }) => {
    void inProcess(server, message.gets).then((usPerGet) => process.send?.({ usPerGet }));
  });
  process.send?.({ port: 0, token, layers: layers.map(([name]) => name) });
} else if (step === 0 || step >= 10) {
  serve({ fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => ready(info.port));
} else {
  const server = createGatewayServer((request, env) => fetch(request, env), { logger });
  server.listen(0, "127.0.0.1", () => ready((server.address() as AddressInfo).port));
}
process.on("disconnect", () => process.exit(0));

/**
 * CPU µs per get of `count` gets handed to `server` one after the other (each answered before
 * the next), as Node's parser would hand them (an `IncomingMessage` with its headers, a
 * `ServerResponse`), over a socket that drops what is written: the gateway's path without the
 * parser, the socket or a load generator, so a loaded machine's scheduling does not reach it.
 */
async function inProcess(server: Server, count: number): Promise<number> {
  const socket = new Duplex({
    read() {},
    write(_chunk, _encoding, done) {
      done();
    },
    writev(_chunks, done) {
      done();
    },
  });
  const rawHeaders = ["Host", "127.0.0.1", "Authorization", `Bearer ${token}`];
  const get = () =>
    new Promise<void>((resolve, reject) => {
      const request = new IncomingMessage(socket as Socket);
      request.method = "GET";
      request.url = "/v2/cheeses/5";
      request.httpVersion = "1.1";
      request.httpVersionMajor = 1;
      request.httpVersionMinor = 1;
      request.rawHeaders = rawHeaders;
      request.headers = { host: "127.0.0.1", authorization: `Bearer ${token}` };
      request.complete = true;
      request.push(null);
      const response = new ServerResponse(request);
      response.assignSocket(socket as Socket);
      response.once("finish", () => {
        response.detachSocket(socket as Socket);
        if (response.statusCode === 200) resolve();
        else reject(new Error(`answered ${response.statusCode}`));
      });
      server.emit("request", request, response);
    });
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) await get();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}
