import { Ajv2020 } from "ajv/dist/2020.js";
import formats from "ajv-formats";
import fc from "fast-check";
import { Client, fetch as undiciFetch } from "undici";
import { operatorToken, registerAndLogin, type TestCustomer } from "./credentials.ts";
import { type Schema, Schemas } from "./fuzz-schema.ts";
import { OPERATOR_KEY, type RunningSystem, startSystem } from "./system.ts";

/**
 * The fuzz run: requests generated from the OpenAPI document the gateway serves, for every
 * operation, sent to a running system; each answer checked against the document. Used by
 * `e2e/fuzz.test.ts` (a bounded run in `pnpm test`) and `pnpm fuzz` (long runs, any seed).
 */

interface Operation {
  id: string;
  method: string;
  /** The path template, e.g. `/v2/cheeses/{cheeseId}`. */
  path: string;
  /** Its key in the document's `paths`, e.g. `/cheeses/{cheeseId}`. */
  key: string;
  parameters: { name: string; in: string; required: boolean; schema: Schema }[];
  body?: { type: string; schema: Schema; required: boolean };
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  /** How the operation is meant to be called: the first of its security schemes. */
  auth: "api_key" | "bearer_auth" | "cheesy_oauth" | "operator_session" | "none";
  /** Every security scheme the operation accepts. */
  schemes: string[];
}

/** A fixture customer: signed in, with an API key of its own. */
type FixtureCustomer = TestCustomer & { apiKey: string; apiKeyId: string };

/** What a generated request refers to, made before the run so valid requests find things. */
export interface Fixtures {
  owner: FixtureCustomer;
  other: FixtureCustomer & { orderId: number };
  /** Who the operations that can end their customer act on instead (see ENDS_ITS_CUSTOMER). */
  standIns: { owner: FixtureCustomer; other: FixtureCustomer };
  operatorBearer: string;
  /** An operator session's token (operator_session); a generated DELETE may end it meanwhile. */
  operatorSession: string;
  cheeseId: number;
  orderId: number;
  webhookId: number;
  imageFile: string;
}

/** A request as generated: symbolic where it names a fixture, so a seed replays on any system. */
interface Generated {
  op: string;
  auth: string;
  pathValues: Record<string, unknown>;
  query: [string, unknown][];
  headers: [string, string][];
  body?: { mode: string; value: unknown };
}

export interface Finding {
  request: string;
  problem: string;
}

export interface FuzzReport {
  seed: number;
  runs: number;
  sent: number;
  statuses: Record<string, number>;
  /**
   * Answers to requests that carried a fixture customer's own valid credentials (its session or
   * API key) on an operation accepting them, other than those that can end their customer: how
   * many, and how many of those were 401 (any would mean the run tested the front door only).
   */
  asCustomer: { sent: number; unauthorized: number };
  findings: Finding[];
}

/**
 * Operations that can end the customer they act on (its session, its API key, its name, its
 * account). They act on stand-in customers, renewed after each success, so the fixture customers'
 * credentials stay valid for the whole run.
 */
const ENDS_ITS_CUSTOMER = new Set(["logoutCustomer", "deleteCustomer", "updateCustomer", "revokeApiKey"]);

const HUGE_HEADER = "h".repeat(20_000);
const address = { street: "1 Rind Row", city: "Wells", zipCode: "BA5 2PB", country: "GB" };
const PNG_1x1 = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

export function operationsOf(document: Schema): Operation[] {
  const operations: Operation[] = [];
  const apiBase = ((document.servers as { url: string }[] | undefined)?.[0]?.url ?? "").replace(/\/$/, "");
  for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      const servers = (op.servers as { url: string }[] | undefined) ?? undefined;
      const base = servers ? servers[0]!.url.replace(/\/$/, "") : apiBase;
      const content = (op.requestBody as Schema | undefined)?.content as
        | Record<string, { schema: Schema }>
        | undefined;
      const [type, media] = Object.entries(content ?? {})[0] ?? [];
      const security = (op.security ?? document.security ?? []) as Record<string, string[]>[];
      operations.push({
        id: op.operationId as string,
        method: method.toUpperCase(),
        path: `${base}${path}`,
        key: path,
        parameters: ((op.parameters ?? []) as Operation["parameters"]).map((p) => ({
          ...p,
          required: !!p.required,
        })),
        ...(type && media
          ? { body: { type, schema: media.schema, required: !!(op.requestBody as Schema).required } }
          : {}),
        responses: op.responses as Operation["responses"],
        auth: (Object.keys(security[0] ?? {})[0] as Operation["auth"] | undefined) ?? "none",
        schemes: security.flatMap((scheme) => Object.keys(scheme)),
      });
    }
  }
  return operations;
}

/** The RPC deadline of a fuzzed system; an answer later than `deadlineMs` is a hang. */
export const RPC_TIMEOUT_MS = 3000;
/** The deadline, and slack for a busy shared machine. */
export const deadlineMs = RPC_TIMEOUT_MS + 3000;

/** A system to fuzz: started as `pnpm start` runs it, its served document, and fixtures. */
export async function startFuzzTarget(): Promise<{
  system: RunningSystem;
  document: Schema;
  fixtures: Fixtures;
}> {
  const system = await startSystem({
    env: {
      RPC_TIMEOUT: `${RPC_TIMEOUT_MS}ms`,
      // Receivers at 127.0.0.1 only (a closed port): nothing the run registers reaches out.
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      RATE_LIMIT_PLANS: "free=100000/unlimited,pro=100000/unlimited",
    },
  });
  try {
    const document = (await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as Schema;
    return { system, document, fixtures: await makeFixtures(system) };
  } catch (error) {
    await system.stop();
    throw error;
  }
}

/** Registers two customers, a cheese, an order of each, a webhook and an image. */
export async function makeFixtures(system: RunningSystem): Promise<Fixtures> {
  const operator = { "x-api-key": OPERATOR_KEY, "content-type": "application/json" };
  const post = async (path: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(`${system.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (response.status >= 300)
      throw new Error(`fixture ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, unknown>;
  };
  const operatorBearer = await operatorToken(system);
  const cheese = await post(
    "/cheeses",
    { authorization: `Bearer ${operatorBearer}` },
    {
      name: "Fuzz Comté",
      category: { name: "Cow" },
      pricePerKg: 30,
    },
  );
  const cheeseId = cheese.id as number;
  const upload = new FormData();
  upload.set("file", new Blob([PNG_1x1], { type: "image/png" }), "one.png");
  const image = await fetch(`${system.baseUrl}/cheeses/${cheeseId}/uploadImage`, {
    method: "POST",
    headers: { authorization: `Bearer ${operatorBearer}` },
    body: upload,
  });
  const imageUrl = ((await image.json()) as { imageUrl?: string }).imageUrl ?? "";
  const customer = async () => {
    const c = await fixtureCustomer(system);
    const order = await post("/store/order", c.bearer, {
      items: [{ cheeseId, quantity: 1 }],
      shippingAddress: address,
    });
    return { ...c, orderId: order.id as number };
  };
  const [owner, other] = [await customer(), await customer()];
  const standIns = { owner: await fixtureCustomer(system), other: await fixtureCustomer(system) };
  const session = await post("/operator/sessions", operator);
  const webhook = await post("/webhooks", operator, {
    url: "http://127.0.0.1:9/fuzz",
    events: ["order.placed"],
  });
  return {
    owner,
    other,
    standIns,
    operatorBearer,
    operatorSession: session.token as string,
    cheeseId,
    orderId: owner.orderId,
    webhookId: webhook.id as number,
    imageFile: imageUrl.split("/").pop() ?? "none.png",
  };
}

/** A new customer, signed in, with an API key. */
async function fixtureCustomer(system: RunningSystem): Promise<FixtureCustomer> {
  const c = await registerAndLogin(system);
  const response = await fetch(`${system.baseUrl}/customer/${c.username}/apiKeys`, {
    method: "POST",
    headers: c.bearer,
  });
  if (response.status >= 300) throw new Error(`fixture API key: ${response.status} ${await response.text()}`);
  const key = (await response.json()) as { key: string; id: number };
  return { ...c, apiKey: key.key, apiKeyId: String(key.id) };
}

/** Every generated request for `operations`, as fast-check arbitraries. */
function requests(schemas: Schemas, operations: Operation[]): fc.Arbitrary<Generated> {
  return fc.oneof(...operations.map((op) => requestFor(schemas, op)));
}

const authModes = [
  "operator-key",
  "operator-bearer",
  "operator-session",
  "owner-session",
  "owner-key",
  "other-session",
  "none",
  "garbage-bearer",
  "tampered-jwt",
  "alg-none-jwt",
  "huge-bearer",
  "huge-api-key",
  "basic",
] as const;

function requestFor(schemas: Schemas, op: Operation): fc.Arbitrary<Generated> {
  const usual = {
    api_key: ["operator-key", "owner-key"],
    bearer_auth: ["owner-session"],
    cheesy_oauth: ["operator-bearer"],
    operator_session: ["operator-session"],
    none: ["none"],
  }[op.auth];
  const auth = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...usual) },
    { weight: 4, arbitrary: fc.constantFrom(...authModes) },
  );
  const pathParams = op.parameters.filter((p) => p.in === "path");
  const pathValues = fc.record(
    Object.fromEntries(
      pathParams.map((p) => [
        p.name,
        fc.oneof(
          { weight: 6, arbitrary: fc.constant(`@fixture:${p.name}`) },
          { weight: 2, arbitrary: fc.constant(`@other:${p.name}`) },
          { weight: 1, arbitrary: schemas.valid(p.schema) },
          { weight: 1, arbitrary: schemas.boundary(p.schema) },
          { weight: 2, arbitrary: schemas.hostile() },
        ),
      ]),
    ),
  );
  const queryParams = op.parameters.filter((p) => p.in === "query");
  const query = fc
    .subarray(queryParams)
    .chain((chosen) =>
      fc.tuple(
        ...chosen.map((p) =>
          fc
            .oneof(
              { weight: 5, arbitrary: schemas.valid(p.schema) },
              { weight: 2, arbitrary: schemas.boundary(p.schema) },
              { weight: 2, arbitrary: schemas.hostile() },
            )
            .map((v): [string, unknown] => [p.name, v]),
        ),
      ),
    );
  const headerParams = op.parameters.filter((p) => p.in === "header");
  const headers = fc
    .subarray(headerParams)
    .chain((chosen) =>
      fc.tuple(
        ...chosen.map((p) =>
          fc
            .oneof(fc.constantFrom('"1"', '"999"', "*", "true", "yes"), fc.stringMatching(/^[ -~]{0,80}$/))
            .map((v): [string, string] => [p.name, v]),
        ),
      ),
    );
  const body = op.body
    ? op.body.type === "application/json" || op.body.type === "application/x-www-form-urlencoded"
      ? fc.oneof(
          { weight: 8, arbitrary: schemas.body(op.body.schema) },
          {
            weight: 2,
            arbitrary: fc.constantFrom(
              { mode: "raw:invalid-json", value: Buffer.from('{"name": "unterminated') },
              {
                mode: "raw:bad-utf8",
                value: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0x22, 0x7d]),
              },
              { mode: "raw:deep", value: Buffer.from(`${"[".repeat(20_000)}${"]".repeat(20_000)}`) },
              { mode: "raw:huge", value: Buffer.alloc(1_100_000, 0x20) },
              { mode: "raw:empty", value: Buffer.alloc(0) },
              { mode: "raw:nul", value: Buffer.from('{"name":"\\u0000\u0000"}') },
              { mode: "raw:duplicate-keys", value: Buffer.from('{"name":"a","name":{"x":1}}') },
              { mode: "raw:wrong-type", value: "not json at all" },
            ),
          },
        )
      : fc.constantFrom(
          { mode: "multipart:png", value: "png" },
          { mode: "multipart:garbage", value: "garbage" },
          { mode: "multipart:no-file", value: "no-file" },
          { mode: "multipart:broken", value: "broken" },
        )
    : fc.constant(undefined);
  return fc.record({ auth, pathValues, query, headers, body }).map((r) => ({ op: op.id, ...r }) as Generated);
}

/** The request to send for a generated one, fixtures filled in. */
function materialise(
  generated: Generated,
  op: Operation,
  fixtures: Fixtures,
  rootUrl: string,
): {
  url: string;
  init: { method: string; headers: Record<string, string>; body?: Buffer | string | FormData };
} {
  const fixtureValue = (name: string, other: boolean): string => {
    switch (name) {
      case "cheeseId":
        return String(fixtures.cheeseId);
      case "orderId":
        return String(other ? fixtures.other.orderId : fixtures.orderId);
      case "username":
        return other ? fixtures.other.username : fixtures.owner.username;
      case "file":
        return fixtures.imageFile;
      case "id":
        return op.path.includes("apiKeys")
          ? fixtures.owner.apiKeyId
          : op.path.includes("webhooks")
            ? String(fixtures.webhookId)
            : "1";
      default:
        return "1";
    }
  };
  let path = op.path;
  for (const [name, value] of Object.entries(generated.pathValues)) {
    const text =
      typeof value === "string" && value.startsWith("@fixture:")
        ? fixtureValue(name, false)
        : typeof value === "string" && value.startsWith("@other:")
          ? fixtureValue(name, true)
          : pathSegment(typeof value === "string" ? value : (JSON.stringify(value) ?? ""));
    path = path.replace(`{${name}}`, text);
  }
  const search = new URLSearchParams(
    generated.query.map(([name, value]): [string, string] => [
      name,
      typeof value === "string" ? value : (JSON.stringify(value) ?? ""),
    ]),
  ).toString();
  const headers: Record<string, string> = Object.fromEntries(generated.headers);
  const jwt = fixtures.owner.token;
  switch (generated.auth) {
    case "operator-key":
      headers["x-api-key"] = OPERATOR_KEY;
      break;
    case "operator-bearer":
      headers.authorization = `Bearer ${fixtures.operatorBearer}`;
      break;
    case "operator-session":
      headers.authorization = `Bearer ${fixtures.operatorSession}`;
      break;
    case "owner-session":
      headers.authorization = `Bearer ${jwt}`;
      break;
    case "owner-key":
      headers["x-api-key"] = fixtures.owner.apiKey;
      break;
    case "other-session":
      headers.authorization = `Bearer ${fixtures.other.token}`;
      break;
    case "garbage-bearer":
      headers.authorization = "Bearer not.a.token";
      break;
    case "tampered-jwt":
      headers.authorization = `Bearer ${jwt.slice(0, -3)}${jwt.slice(-3) === "AAA" ? "BBB" : "AAA"}`;
      break;
    case "alg-none-jwt": {
      const [, payload] = jwt.split(".");
      headers.authorization = `Bearer ${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${payload}.`;
      break;
    }
    case "huge-bearer":
      headers.authorization = `Bearer ${HUGE_HEADER}`;
      break;
    case "huge-api-key":
      headers["x-api-key"] = HUGE_HEADER;
      break;
    case "basic":
      headers.authorization = `Basic ${Buffer.from("e2e-operator:wrong").toString("base64")}`;
      break;
  }
  let body: Buffer | string | FormData | undefined;
  if (generated.body && op.body) {
    const { mode, value } = generated.body;
    if (op.body.type === "multipart/form-data") {
      if (mode === "multipart:broken") {
        headers["content-type"] = "multipart/form-data; boundary=zzz";
        body = '--zzz\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nnot ended';
      } else {
        const form = new FormData();
        if (mode === "multipart:png") form.set("file", new Blob([PNG_1x1], { type: "image/png" }), "a.png");
        if (mode === "multipart:garbage")
          form.set("file", new Blob([Buffer.from("GIF89a garbage")], { type: "image/png" }), "a.png");
        form.set("caption", "fuzz");
        body = form;
      }
    } else if (op.body.type === "application/x-www-form-urlencoded") {
      headers["content-type"] = op.body.type;
      body = Buffer.isBuffer(value)
        ? value
        : new URLSearchParams(
            Object.entries(typeof value === "object" && value !== null ? value : { value }).map(
              ([k, v]): [string, string] => [k, typeof v === "string" ? v : (JSON.stringify(v) ?? "")],
            ),
          ).toString();
    } else {
      headers["content-type"] = "application/json";
      body = Buffer.isBuffer(value)
        ? value
        : mode === "raw:wrong-type"
          ? String(value)
          : JSON.stringify(value);
    }
  }
  return {
    url: `${rootUrl}${path}${search ? `?${search}` : ""}`,
    init: { method: op.method, headers, ...(body === undefined ? {} : { body }) },
  };
}

/** A path segment: percent-escapes (`%ff`, bad UTF-8 once decoded) go as they are, the rest encoded. */
function pathSegment(value: string): string {
  if (/^(%[0-9a-f]{2})+$/i.test(value)) return value;
  // Lone surrogates become U+FFFD, as any client's UTF-8 encoder makes them.
  return encodeURIComponent(Buffer.from(value, "utf8").toString("utf8"));
}

/** The schema an answer must match: the operation's own for that status, else Error/ValidationError. */
function expectedSchema(op: Operation, status: number): string | undefined {
  const declared = op.responses[String(status)] ?? op.responses.default;
  const json = declared?.content?.["application/json"];
  if (declared && !json) return undefined;
  if (json?.schema) {
    const pointer = `#/paths/${op.key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    return `${pointer}/${op.method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
  }
  return status >= 400 ? "error" : undefined;
}

/**
 * Sends `runs` generated requests (a few at a time) and returns what broke the rules: a 5xx, no
 * answer within `deadlineMs`, an error without `X-Request-Id` or the document's error body, a 2xx
 * body not matching its schema.
 */
export async function fuzz(options: {
  system: RunningSystem;
  document: Schema;
  fixtures: Fixtures;
  seed: number;
  runs: number;
  deadlineMs: number;
  /** Requests under way at once (default 6). */
  concurrency?: number;
  onProgress?: (sent: number) => void;
}): Promise<FuzzReport> {
  const { document, fixtures, system } = options;
  const operations = operationsOf(document);
  const byId = new Map(operations.map((op) => [op.id, op]));
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  // ajv-formats is CommonJS: its module object is the plugin.
  (formats as unknown as typeof formats.default)(ajv);
  ajv.addSchema({ ...document, $id: "openapi" });
  const errorSchema = ajv.compile({
    anyOf: [
      { $ref: "openapi#/components/schemas/ValidationError" },
      { $ref: "openapi#/components/schemas/Error" },
    ],
  });
  const validators = new Map<string, ReturnType<typeof ajv.compile>>();
  const validatorFor = (pointer: string) => {
    if (pointer === "error") return errorSchema;
    let validator = validators.get(pointer);
    if (!validator) {
      validator = ajv.compile({ $ref: `openapi${pointer}` });
      validators.set(pointer, validator);
    }
    return validator;
  };

  const generated = fc.sample(requests(new Schemas(document), operations), {
    seed: options.seed,
    numRuns: options.runs,
  });
  const report: FuzzReport = {
    seed: options.seed,
    runs: options.runs,
    sent: 0,
    statuses: {},
    asCustomer: { sent: 0, unauthorized: 0 },
    findings: [],
  };
  // The stand-ins for the owner and the other customer in operations that can end them; a
  // renewal under way is awaited by the next such request.
  let standIns = fixtures.standIns;
  // Renewals run one after another, each replacing the stand-in its request may have ended; the
  // next request that can end a customer waits for all of them.
  let renewal: Promise<void> = Promise.resolve();
  // A POST on a pooled connection the gateway closed as idle fails without reaching it (fetch
  // retries only idempotent requests): a stand-in is scaffolding, so try again.
  const freshCustomer = async (attempt = 1): Promise<FixtureCustomer> =>
    fixtureCustomer(system).catch((error: Error) => {
      if (attempt >= 3) throw error;
      return freshCustomer(attempt + 1);
    });
  const renew = (which: "owner" | "other") => {
    renewal = renewal.then(() =>
      freshCustomer().then(
        (fresh) => {
          standIns = { ...standIns, [which]: fresh };
        },
        (error: Error) => {
          report.findings.push({ request: "a stand-in customer", problem: `not created: ${error.message}` });
        },
      ),
    );
    return renewal;
  };
  let next = 0;
  // Each worker its own connection (re-opened when the gateway closes it, as after a 431 or a
  // 413): what one request does to its connection shows on that worker's next request.
  const worker = async () => {
    const dispatcher = new Client(system.rootUrl, {
      headersTimeout: options.deadlineMs,
      bodyTimeout: options.deadlineMs,
    });
    let previous = "none";
    try {
      while (next < generated.length) {
        const index = next++;
        const request = generated[index]!;
        const op = byId.get(request.op)!;
        const endsItsCustomer = ENDS_ITS_CUSTOMER.has(op.id);
        if (endsItsCustomer) await renewal;
        const acting = endsItsCustomer
          ? {
              ...fixtures,
              owner: standIns.owner,
              other: { ...standIns.other, orderId: fixtures.other.orderId },
            }
          : fixtures;
        const { url, init } = materialise(request, op, acting, system.rootUrl);
        const ownCredentials =
          !endsItsCustomer &&
          ((["owner-session", "other-session"].includes(request.auth) &&
            op.schemes.includes("bearer_auth")) ||
            (request.auth === "owner-key" && op.schemes.includes("api_key")));
        const label = `#${index} ${request.op} ${init.method} ${url.slice(system.rootUrl.length, system.rootUrl.length + 160)} auth=${request.auth} body=${request.body?.mode ?? "none"}`;
        const after = previous;
        previous = label;
        const finding = (problem: string) =>
          report.findings.push({
            request: label,
            problem: `${problem} (previous on this connection: ${after.slice(0, 160)})`,
          });
        const started = Date.now();
        try {
          const response = await undiciFetch(url, {
            ...init,
            // biome-ignore lint/suspicious/noExplicitAny: undici's and the DOM's FormData are one at runtime
            body: init.body as any,
            redirect: "manual",
            dispatcher,
            signal: AbortSignal.timeout(options.deadlineMs),
          });
          const text = await response.text();
          report.sent++;
          report.statuses[response.status] = (report.statuses[response.status] ?? 0) + 1;
          if (ownCredentials) {
            report.asCustomer.sent++;
            if (response.status === 401) report.asCustomer.unauthorized++;
          }
          if (endsItsCustomer && response.status < 300) {
            // Whichever stand-in it acted on may be gone: its session, key, name or account.
            const other =
              request.auth === "other-session" ||
              Object.values(request.pathValues).some((v) => typeof v === "string" && v.startsWith("@other:"));
            await renew(other ? "other" : "owner");
          }
          if (response.status >= 500) finding(`${response.status}: ${text.slice(0, 300)}`);
          const pointer = expectedSchema(op, response.status);
          if (response.status >= 400 && !response.headers.get("x-request-id"))
            finding(`${response.status} without X-Request-Id`);
          const isJson = /json/.test(response.headers.get("content-type") ?? "");
          if (pointer && response.status !== 204 && response.status !== 304) {
            let body: unknown;
            try {
              body = isJson ? JSON.parse(text) : Symbol("not json");
            } catch {
              body = Symbol("unparseable");
            }
            const validate = validatorFor(pointer);
            if (typeof body === "symbol" || !validate(body)) {
              finding(
                `${response.status} body does not match ${pointer.split("/").slice(-5).join("/")}: ${ajv.errorsText(validate.errors)}; got ${text.slice(0, 300)}`,
              );
            }
          }
        } catch (error) {
          const elapsed = Date.now() - started;
          const cause = (error as Error & { cause?: Error }).cause;
          finding(
            elapsed >= options.deadlineMs - 50
              ? `no answer within ${options.deadlineMs} ms`
              : `request failed: ${(error as Error).message}${cause ? ` (${cause.message})` : ""}`,
          );
        }
        options.onProgress?.(index + 1);
      }
    } finally {
      await dispatcher.close();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 6 }, worker));
  return report;
}

/** A report as text: the seed to replay with, statuses seen, and each finding. */
export function describeReport(report: FuzzReport): string {
  const lines = [
    `fuzz: seed ${report.seed}, ${report.sent}/${report.runs} requests answered; statuses ${JSON.stringify(report.statuses)}`,
    `as a fixture customer with its own valid credentials: ${report.asCustomer.sent} requests, ${report.asCustomer.unauthorized} answered 401`,
    `replay: pnpm fuzz --seed ${report.seed} --runs ${report.runs}`,
  ];
  for (const f of report.findings.slice(0, 40)) lines.push(`  ${f.request}\n    → ${f.problem}`);
  if (report.findings.length > 40) lines.push(`  … and ${report.findings.length - 40} more`);
  return lines.join("\n");
}
