import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { type ExtraGateway, startExtraGateway } from "./support/second-gateway.ts";
import { json, OPERATOR_KEY, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * Sessions and access over HTTP: login tokens (EdDSA JWTs with a key that survives restarts),
 * logout on every replica, operator sessions (the console's) ended on every replica, and 401/403 for every kind of bad or insufficient credential.
 */
describe("sessions and access", () => {
  const data = tempDir("sessions");
  let system: RunningSystem;
  let second: ExtraGateway;
  let operator: Awaited<ReturnType<typeof operatorHeaders>>;
  let cheeseId: number;

  beforeAll(async () => {
    system = await startSystem({ dataDir: data.path, env: { RATE_LIMIT_PLANS: "" } });
    second = await startExtraGateway(system);
    operator = await operatorHeaders(system);
    const created = await fetch(`${system.baseUrl}/cheeses`, {
      method: "POST",
      headers: { "content-type": "application/json", ...operator.bearer },
      body: JSON.stringify({ name: "Session Brie" }),
    });
    cheeseId = (await json(created)).id;
  });
  afterAll(async () => {
    await second?.stop();
    await system?.stop();
    data.remove();
  });

  const get = (baseUrl: string, path: string, headers: Record<string, string> = {}) =>
    fetch(`${baseUrl}${path}`, { headers });
  const loginRequest = (body: unknown) =>
    fetch(`${system.baseUrl}/customer/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  describe("login", () => {
    let alice: TestCustomer;
    beforeAll(async () => {
      alice = await registerAndLogin(system);
    });

    it("answers a 24-hour EdDSA JWT with kid, verifiable with the published key", async () => {
      const response = await loginRequest({ username: alice.username, password: alice.password });
      expect(response.status).toBe(200);
      const body = await json(response);
      const { header, payload } = decode(body.token);
      expect(header).toMatchObject({ alg: "EdDSA", kid: expect.any(String) });
      expect(payload).toMatchObject({
        sub: String(alice.id),
        username: alice.username,
        jti: expect.any(String),
        scope: "read:cheeses read:orders write:orders",
      });
      expect(payload.exp - payload.iat).toBe(24 * 3600);
      expect(body.expiresAt).toBe(new Date(payload.exp * 1000).toISOString());
      expect(response.headers.get("x-expires-after")).toBe(body.expiresAt);
      expect(response.headers.get("x-rate-limit")).toBe("100");

      const jwks = await json(await get(system.rootUrl, "/.well-known/jwks.json"));
      const jwk = jwks.keys.find((k: { kid: string }) => k.kid === header.kid);
      expect(jwk).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA" });
      expect(jwk.d).toBeUndefined();
      expect(verifies(body.token, createPublicKey({ key: jwk, format: "jwk" }))).toBe(true);
    });

    it("answers 401 alike for a wrong password and an unknown user, with the same work behind each", async () => {
      const wrong = await loginRequest({ username: alice.username, password: "not the password" });
      const unknown = await loginRequest({ username: "nobody_at_all", password: "not the password" });
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(await json(wrong)).toEqual(await json(unknown));

      // What a caller could time is the work behind the answer: both verify an argon2 hash (an
      // unknown user a dummy one), so both cost the customer service about the same CPU time.
      // Without the dummy hash an unknown user would cost a fraction. Measured as CPU time, not
      // wall-clock time, which the machine's other load would blur. The processes' own background
      // work (consumers, collections) lands in some batches: each kind's cheapest batch of
      // alternating rounds is compared, as that work only ever adds.
      const customers = system.pids().customer ?? [];
      expect(customers.length).toBeGreaterThan(0);
      const cpuOf = async (usernames: string[]) => {
        const before = cpuSeconds(customers);
        for (const username of usernames) {
          const response = await loginRequest({ username, password: "not the password" });
          expect(response.status).toBe(401);
        }
        return cpuSeconds(customers) - before;
      };
      const logins = 6;
      const wrongBatches: number[] = [];
      const unknownBatches: number[] = [];
      for (let round = 0; round < 3; round++) {
        wrongBatches.push(await cpuOf(Array.from({ length: logins }, () => alice.username)));
        unknownBatches.push(await cpuOf(Array.from({ length: logins }, (_, i) => `nobody_${round}_${i}`)));
      }
      const wrongCpu = Math.min(...wrongBatches);
      const unknownCpu = Math.min(...unknownBatches);
      expect(unknownCpu).toBeGreaterThan(wrongCpu * 0.6);
      expect(unknownCpu).toBeLessThan(wrongCpu * 1.7);
    });

    it("answers a malformed login body with 422", async () => {
      const response = await loginRequest({ username: alice.username });
      expect(response.status).toBe(422);
      expect((await json(response)).errors).toContainEqual({
        field: "password",
        message: expect.any(String),
      });
    });

    it("accepts the token wherever bearer_auth is, and where cheesy_oauth asks for one of its scopes", async () => {
      expect((await get(system.baseUrl, `/customer/${alice.username}`, alice.bearer)).status).toBe(200);
      expect((await get(system.baseUrl, `/cheeses/${cheeseId}`, alice.bearer)).status).toBe(200);
      const writeCheeses = await fetch(`${system.baseUrl}/cheeses`, {
        method: "POST",
        headers: { "content-type": "application/json", ...alice.bearer },
        body: JSON.stringify({ name: "Not allowed" }),
      });
      expect(writeCheeses.status).toBe(403);
      expect(await json(writeCheeses)).toMatchObject({ code: 403, type: "forbidden" });
    });
  });

  describe("logout", () => {
    it("revokes the token on every gateway replica within a second", async () => {
      const bob = await registerAndLogin(system);
      expect((await get(second.baseUrl, `/customer/${bob.username}`, bob.bearer)).status).toBe(200);
      const logout = await get(system.baseUrl, "/customer/logout", bob.bearer);
      expect(logout.status).toBe(204);
      const loggedOutAt = Date.now();
      await expect
        .poll(async () => (await get(second.baseUrl, `/customer/${bob.username}`, bob.bearer)).status, {
          timeout: 3000,
          interval: 20,
        })
        .toBe(401);
      expect(Date.now() - loggedOutAt).toBeLessThan(1000);
      const here = await get(system.baseUrl, `/customer/${bob.username}`, bob.bearer);
      expect(here.status).toBe(401);
      expect(here.headers.get("www-authenticate")).toContain('error="invalid_token"');
      expect((await get(system.baseUrl, "/customer/logout", bob.bearer)).status).toBe(401);
      // Only that session ends: a new login works.
      const again = await loginRequest({ username: bob.username, password: bob.password });
      const fresh = { authorization: `Bearer ${(await json(again)).token}` };
      expect((await get(second.baseUrl, `/customer/${bob.username}`, fresh)).status).toBe(200);
    });

    it("takes a session token only: an API key or client token is 403, nothing is 401", async () => {
      expect((await get(system.baseUrl, "/customer/logout", operator.apiKey)).status).toBe(403);
      expect((await get(system.baseUrl, "/customer/logout", operator.bearer)).status).toBe(403);
      const anonymous = await get(system.baseUrl, "/customer/logout");
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("www-authenticate")).toContain("Bearer");
    });
  });

  describe("operator sessions", () => {
    const open = async () => {
      const opened = await fetch(`${system.baseUrl}/operator/sessions`, {
        method: "POST",
        headers: operator.apiKey,
      });
      expect(opened.status).toBe(201);
      return (await json(opened)) as { token: string; operatorId: string; expiresAt: string };
    };
    const session = (baseUrl: string, token: string, method = "GET") =>
      fetch(`${baseUrl}/operator/session`, { method, headers: { authorization: `Bearer ${token}` } });

    it("opens one with an operator key only, for 8 hours, with a token good for nothing but that session", async () => {
      const { token, operatorId, expiresAt } = await open();
      expect(operatorId).toMatch(/^op:[0-9a-f]{12}$/);
      expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(8 * 3600_000 - 60_000);
      const read = await session(second.baseUrl, token);
      expect(read.status).toBe(200);
      expect(await json(read)).toEqual({ operatorId, expiresAt });
      // Not the operator's key: the API's other operations refuse it.
      const bearer = { authorization: `Bearer ${token}` };
      expect((await get(system.baseUrl, "/webhooks", bearer)).status).toBe(403);
      expect((await get(system.baseUrl, "/dead-letters", bearer)).status).toBe(403);
      // Nor does any other credential open or read one.
      const alice = await registerAndLogin(system);
      expect((await get(system.baseUrl, "/operator/session", alice.bearer)).status).toBe(403);
      expect((await get(system.baseUrl, "/operator/session", operator.apiKey)).status).toBe(403);
      const byCustomer = await fetch(`${system.baseUrl}/operator/sessions`, {
        method: "POST",
        headers: alice.bearer,
      });
      expect(byCustomer.status).toBe(403);
    });

    it("ends on every gateway replica within a second", async () => {
      const { token } = await open();
      expect((await session(second.baseUrl, token)).status).toBe(200);
      expect((await session(system.baseUrl, token, "DELETE")).status).toBe(204);
      const endedAt = Date.now();
      await expect
        .poll(async () => (await session(second.baseUrl, token)).status, { timeout: 3000, interval: 20 })
        .toBe(401);
      expect(Date.now() - endedAt).toBeLessThan(1000);
      expect((await session(system.baseUrl, token, "DELETE")).status).toBe(401);
    });

    it("signs the console out on every replica: the cookie signed out beside one gateway is refused beside the other", async () => {
      const jar = new Map<string, string>();
      const visit = async (rootUrl: string, path: string, form?: Record<string, string>) => {
        const response = await fetch(`${rootUrl}${path}`, {
          method: form ? "POST" : "GET",
          redirect: "manual",
          headers: {
            cookie: [...jar].map(([name, value]) => `${name}=${value}`).join("; "),
            ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
          },
          ...(form ? { body: new URLSearchParams(form).toString() } : {}),
        });
        for (const line of response.headers.getSetCookie()) {
          const [name = "", value = ""] = (line.split(";")[0] ?? "").split("=");
          if (value && !/max-age=0/i.test(line)) jar.set(name, value);
          else jar.delete(name);
        }
        return response;
      };
      const csrfOf = async (response: Response) =>
        /name="_csrf" value="([^"]+)"/.exec(await response.text())?.[1] ?? "";

      const form = await visit(system.rootUrl, "/console/sign-in");
      const signed = await visit(system.rootUrl, "/console/sign-in", {
        _csrf: await csrfOf(form),
        key: OPERATOR_KEY,
      });
      expect(signed.status).toBe(303);
      const cookie = jar.get("console_session")!;
      const page = await visit(system.rootUrl, "/console/webhooks");
      expect(page.status).toBe(200);
      const onSecond = () =>
        fetch(`${second.rootUrl}/console/webhooks`, {
          redirect: "manual",
          headers: { cookie: `console_session=${cookie}` },
        });
      expect((await onSecond()).status).toBe(200);

      const out = await visit(system.rootUrl, "/console/sign-out", { _csrf: await csrfOf(page) });
      expect(out.headers.get("location")).toMatch(/\/console\/sign-in$/);
      await expect
        .poll(async () => (await onSecond()).headers.get("location") ?? "", { timeout: 3000, interval: 20 })
        .toMatch(/\/console\/sign-in$/);
    });
  });

  describe("refused credentials", () => {
    let carol: TestCustomer;
    let kid: string;
    let realKey: KeyObject;
    beforeAll(async () => {
      carol = await registerAndLogin(system);
      kid = decode(carol.token).header.kid;
      const jwk = JSON.parse(readFileSync(join(system.dataDir, "customer", "jwt-signing-key.json"), "utf8"));
      realKey = createPrivateKey({ key: jwk, format: "jwk" });
    });
    const claims = () => {
      const now = Math.floor(Date.now() / 1000);
      return {
        iss: decode(carol.token).payload.iss,
        sub: String(carol.id),
        username: carol.username,
        kind: "session",
        scope: "read:cheeses read:orders write:orders",
        jti: `forged-${now}-${Math.random()}`,
        iat: now,
        exp: now + 3600,
      };
    };
    const refused = async (token: string) => {
      const response = await get(system.baseUrl, `/customer/${carol.username}`, {
        authorization: `Bearer ${token}`,
      });
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toMatch(/Bearer/);
      expect(await json(response)).toMatchObject({ code: 401, type: "unauthorized" });
    };

    it("accepts a token signed with the real key, so the refusals below are about what they change", async () => {
      const token = signJwt({ alg: "EdDSA", kid, typ: "JWT" }, claims(), realKey);
      expect(
        (await get(system.baseUrl, `/customer/${carol.username}`, { authorization: `Bearer ${token}` }))
          .status,
      ).toBe(200);
    });

    it("refuses a foreign signature, alg none, an expired token, and garbage with 401", async () => {
      const foreign = generateKeyPairSync("ed25519").privateKey;
      await refused(signJwt({ alg: "EdDSA", kid, typ: "JWT" }, claims(), foreign));
      const none = `${b64(JSON.stringify({ alg: "none", typ: "JWT" }))}.${b64(JSON.stringify(claims()))}.`;
      await refused(none);
      const now = Math.floor(Date.now() / 1000);
      await refused(
        signJwt(
          { alg: "EdDSA", kid, typ: "JWT" },
          { ...claims(), iat: now - 90_000, exp: now - 3600 },
          realKey,
        ),
      );
      await refused("not.a.token");
      // A valid token whose signature bytes were altered.
      await refused(`${carol.token.slice(0, -4)}AAAA`);
    });

    it("refuses an unknown API key with 401", async () => {
      for (const key of ["guess", "chs_notarealkeyatall0000000000000000000000000"]) {
        const response = await get(system.baseUrl, `/cheeses/${cheeseId}`, { "x-api-key": key });
        expect(response.status).toBe(401);
        expect(response.headers.get("www-authenticate")).toContain('error="invalid_token"');
      }
    });

    it("answers 401 with WWW-Authenticate on every secured operation of the API without valid credentials", async () => {
      const doc = await json(await get(system.baseUrl, "/openapi.json"));
      const secured: [string, string][] = [];
      for (const [path, item] of Object.entries(
        doc.paths as Record<string, Record<string, { security?: unknown[] }>>,
      )) {
        for (const [method, operation] of Object.entries(item)) {
          if (operation.security && operation.security.length > 0) secured.push([method, path]);
        }
      }
      expect(secured.length).toBeGreaterThan(8);
      const expired = signJwt(
        { alg: "EdDSA", kid, typ: "JWT" },
        { ...claims(), exp: Math.floor(Date.now() / 1000) - 60 },
        realKey,
      );
      for (const [method, path] of secured) {
        const url = `${system.baseUrl}${path.replace(/\{[^}]+\}/g, (p) => (p === "{username}" ? carol.username : "1"))}`;
        const attempts: Record<string, string>[] = [
          {},
          { authorization: `Bearer ${expired}` },
          { "x-api-key": "not-a-key" },
        ];
        for (const headers of attempts) {
          const response = await fetch(url, {
            method: method.toUpperCase(),
            headers: { "content-type": "application/json", ...headers },
            body: method === "get" || method === "delete" ? undefined : "{}",
          });
          expect(response.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
          expect(response.headers.get("www-authenticate"), `${method} ${path}`).toBeTruthy();
          expect(await json(response)).toMatchObject({ code: 401, type: "unauthorized" });
        }
      }
    });

    it("answers 403 for valid credentials without the scope, and for someone else's account", async () => {
      const readOnly = await fetch(`${system.rootUrl}/oauth/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${Buffer.from("e2e-operator:e2e-operator-secret").toString("base64")}`,
        },
        body: "grant_type=client_credentials&scope=read:cheeses",
      });
      const token = { authorization: `Bearer ${(await json(readOnly)).access_token}` };
      const write = await fetch(`${system.baseUrl}/cheeses`, {
        method: "POST",
        headers: { "content-type": "application/json", ...token },
        body: JSON.stringify({ name: "Nope" }),
      });
      expect(write.status).toBe(403);
      const dave = await registerAndLogin(system);
      expect((await get(system.baseUrl, `/customer/${dave.username}`, carol.bearer)).status).toBe(403);
    });
  });

  it("keeps the signing key across a restart: tokens stay valid and the kid stays the same", async () => {
    const erin = await registerAndLogin(system);
    const kidBefore = decode(erin.token).header.kid;
    await second.stop();
    await system.stop();
    // The same address: tokens name the gateway's public URL as their issuer.
    const port = Number(new URL(system.rootUrl).port);
    system = await startSystem({ dataDir: data.path, port, env: { RATE_LIMIT_PLANS: "" } });
    const jwks = await json(await get(system.rootUrl, "/.well-known/jwks.json"));
    expect(jwks.keys.map((k: { kid: string }) => k.kid)).toEqual([kidBefore]);
    expect((await get(system.baseUrl, `/customer/${erin.username}`, erin.bearer)).status).toBe(200);
  });
});

// biome-ignore lint/suspicious/noExplicitAny: decoded JWT parts are arbitrary JSON
function decode(token: string): { header: any; payload: any } {
  const [header, payload] = token.split(".");
  return {
    header: JSON.parse(Buffer.from(header!, "base64url").toString()),
    payload: JSON.parse(Buffer.from(payload!, "base64url").toString()),
  };
}

function b64(text: string): string {
  return Buffer.from(text).toString("base64url");
}

function signJwt(header: object, payload: object, key: KeyObject): string {
  const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(payload))}`;
  return `${input}.${sign(null, Buffer.from(input), key).toString("base64url")}`;
}

function verifies(token: string, key: KeyObject): boolean {
  const [header, payload, signature] = token.split(".");
  return verify(null, Buffer.from(`${header}.${payload}`), key, Buffer.from(signature!, "base64url"));
}

/** CPU time (user and system, every thread) the processes have used so far, from /proc. */
function cpuSeconds(pids: number[]): number {
  const ticksPerSecond = 100; // USER_HZ, the unit of /proc/<pid>/stat on Linux
  let ticks = 0;
  for (const pid of pids) {
    // After the command name (in parentheses, which may hold spaces): state is field 3, utime 14, stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / ticksPerSecond;
}
