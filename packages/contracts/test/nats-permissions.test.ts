import { subjectMatches } from "@cheese/messaging";
import {
  type NatsIdentity,
  natsIdentities,
  natsServices,
  permissionsOf,
} from "@cheese/messaging/permissions";
import { describe, expect, it } from "vitest";
import * as contracts from "../src/index.ts";

/** Every RPC subject the contracts define, by the service that serves it (its first token). */
const rpcSubjects = Object.values(contracts)
  .flatMap((value) => (value && typeof value === "object" ? Object.values(value) : []))
  .flatMap((definition) =>
    definition &&
    typeof definition === "object" &&
    typeof (definition as { subject?: unknown }).subject === "string"
      ? [(definition as { subject: string }).subject]
      : [],
  );

/** Subjects of the bus's own machinery, not RPCs. */
const machinery = /^(\$JS\.|\$KV\.|_INBOX\.|events\.|deadletters\.|notices\.|broadcast\.|relay\.)/;

describe("NATS permissions (packages/messaging/src/permissions.ts)", () => {
  it("found the contracts' RPC definitions", () => {
    expect(rpcSubjects).toContain("customer.customer.get");
  });

  it.each(natsServices)("lets %s ask only RPCs the contracts define, none of its own", (service) => {
    const calls = permissionsOf(service).publish.filter((subject) => !machinery.test(subject));
    for (const subject of calls) {
      const owner = subject.split(".")[0];
      expect(owner, subject).not.toBe(service);
      const defined = subject.endsWith(".>")
        ? rpcSubjects.some((rpc) => rpc.startsWith(subject.slice(0, -1)))
        : rpcSubjects.includes(subject);
      expect(defined, `${service} may ask ${subject}, which no contract defines`).toBe(true);
    }
  });

  it("lets each service serve its own subjects and no other's", () => {
    for (const service of natsServices) {
      const served = permissionsOf(service).subscribe.filter((subject) => !machinery.test(subject));
      expect(served).toEqual([`${service}.>`]);
    }
  });

  /** The identities allowed to `direction` `subject` (a literal subject, matched against wildcards). */
  function allowed(direction: "publish" | "subscribe", subject: string): NatsIdentity[] {
    return natsIdentities.filter((identity) =>
      permissionsOf(identity)[direction].some((pattern) => subjectMatches(pattern, subject)),
    );
  }

  it("lets only a service with an outbox relay answer and ask for its own relay-lease holders", () => {
    for (const service of ["catalogue", "ordering", "customer"]) {
      const holder = `relay.${service}.holder.0b7c6a52-1d5e-4a53-8d8e-6a2f0f1c9e11`;
      expect(allowed("subscribe", holder), holder).toEqual([service]);
      expect(allowed("publish", holder), holder).toEqual([service]);
    }
    expect(allowed("subscribe", "relay.notification.holder.x")).toEqual([]);
  });

  it("lets the catalogue append notices and hear what the gateway applied, and the gateway append lease records and say what it applied", () => {
    const { channel } = contracts.cheeseChangeNotices;
    // Notices are the catalogue's alone, read-lease grants and releases the gateway's alone.
    expect(allowed("publish", `notices.${channel}`)).toEqual(["catalogue"]);
    expect(allowed("publish", `notices.${channel}.lease`)).toEqual(["gateway"]);
    expect(allowed("subscribe", `notices.${channel}`)).toEqual([]);
    expect(allowed("subscribe", `notices.${channel}.lease`)).toEqual([]);
    expect(allowed("publish", `notices.${channel}.applied`)).toEqual(["gateway"]);
    expect(allowed("subscribe", `notices.${channel}.applied`)).toEqual(["catalogue"]);
  });

  it("lets both ends of a notice channel make and follow its stream, and nobody purge or delete it", () => {
    const stream = `NOTICES_${contracts.cheeseChangeNotices.channel}`;
    for (const api of ["STREAM.CREATE", "STREAM.UPDATE", "STREAM.INFO", "STREAM.MSG.GET"])
      expect(allowed("publish", `$JS.API.${api}.${stream}`), api).toEqual(
        expect.arrayContaining(["catalogue", "gateway"]),
      );
    for (const api of ["CREATE", "MSG.NEXT", "INFO", "DELETE"])
      expect(allowed("publish", `$JS.API.CONSUMER.${api}.${stream}.follower`), api).toEqual(
        expect.arrayContaining(["catalogue", "gateway"]),
      );
    for (const api of ["STREAM.PURGE", "STREAM.DELETE", "STREAM.MSG.DELETE", "CONSUMER.DURABLE.CREATE"])
      expect(allowed("publish", `$JS.API.${api}.${stream}`), api).toEqual([]);
  });

  it("lets only the customer service send a plan change, and only the gateway hear it", () => {
    expect(allowed("publish", contracts.PLAN_CHANGED)).toEqual(["customer"]);
    expect(allowed("subscribe", contracts.PLAN_CHANGED)).toEqual(["gateway"]);
  });
});
