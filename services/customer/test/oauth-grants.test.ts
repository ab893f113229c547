import type { TokenScope as Scope } from "@cheese/contracts";
import { createInProcessBroker } from "@cheese/messaging";
import { ManualClock } from "@cheese/service-kit/testing";
import { describe, expect, it } from "vitest";
import { OAuthGrants, REFRESH_TOKEN_TTL_MS } from "../src/handlers/identity/oauth-grants.ts";
import { Revocations } from "../src/handlers/identity/revocations.ts";

const code = {
  clientId: "spa",
  redirectUri: "http://127.0.0.1/callback",
  redirectUriGiven: true,
  customerId: 7,
  username: "alice",
  scopes: ["read:orders" as const],
  codeChallenge: "challenge",
  passwordVersion: 0,
};

/** Expiry of codes and refresh tokens, on a manual clock. */
describe("authorization codes and refresh tokens", () => {
  const clock = new ManualClock("2026-11-22T10:00:00.000Z");
  const bus = createInProcessBroker().connect("customer");
  const grants = new OAuthGrants(bus, 60_000, new Revocations(bus, clock), clock);

  it("redeems a code once, until its lifetime (OAUTH_CODE_TTL) is over and not after", async () => {
    const once = await grants.issueCode(code);
    expect(await grants.redeemCode(once)).toMatchObject({
      ok: true,
      code: { customerId: 7, clientId: "spa" },
    });
    expect(await grants.redeemCode(once)).toEqual({ ok: false, reused: true });

    const onTime = await grants.issueCode(code);
    await clock.advance(60_000 - 1);
    expect(await grants.redeemCode(onTime)).toMatchObject({ ok: true, code: { customerId: 7 } });

    const late = await grants.issueCode(code);
    await clock.advance(60_000);
    expect(await grants.redeemCode(late)).toEqual({ ok: false, reused: false });
  });

  it("refreshes until the refresh token's 30 days are over, and not after", async () => {
    const grant = await grants.startGrant(
      { clientId: "spa", customerId: 8, scopes: ["read:orders"], passwordVersion: 0 },
      REFRESH_TOKEN_TTL_MS,
    );
    const accept = async (entry: { scopes: Scope[] }) => entry.scopes;
    const onTime = await grants.issueRefreshToken(grant, ["read:orders"]);
    await clock.advance(REFRESH_TOKEN_TTL_MS - 1);
    expect(await grants.redeemRefreshToken(onTime, "spa", accept)).toMatchObject({ ok: true });

    const late = await grants.issueRefreshToken(grant, ["read:orders"]);
    await clock.advance(REFRESH_TOKEN_TTL_MS);
    expect(await grants.redeemRefreshToken(late, "spa", accept)).toMatchObject({ ok: false });
  });
});
