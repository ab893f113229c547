import { operationExamples, operationText, webhookEventKinds } from "@cheese/contracts";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway } from "./support.ts";

// biome-ignore lint/suspicious/noExplicitAny: the served document is walked generically
type Json = any;

const methods = ["get", "put", "post", "delete", "patch"];
const pointer = (...parts: string[]) =>
  `#/${parts.map((p) => p.replaceAll("~", "~0").replaceAll("/", "~1")).join("/")}`;

/** Every operation of the document, with where it is (a JSON pointer) and what it is called. */
function operations(document: Json): { where: string; name: string; operation: Json }[] {
  const found = [];
  for (const section of ["paths", "webhooks"]) {
    for (const [path, item] of Object.entries<Json>(document[section] ?? {})) {
      for (const method of methods) {
        const operation = item[method];
        if (operation) {
          found.push({
            where: pointer(section, path, method),
            name: `${method.toUpperCase()} ${path}`,
            operation,
          });
        }
      }
    }
  }
  return found;
}

/** Every body the document describes: request bodies and responses, with their examples. */
function bodies(document: Json) {
  const found: { name: string; where: string; media: Json }[] = [];
  for (const { where, name, operation } of operations(document)) {
    for (const [type, media] of Object.entries<Json>(operation.requestBody?.content ?? {})) {
      found.push({
        name: `${name} request ${type}`,
        where: `${where}/requestBody/content/${pointer(type).slice(2)}`,
        media,
      });
    }
    for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) {
      for (const [type, media] of Object.entries<Json>(response.content ?? {})) {
        found.push({
          name: `${name} ${status} ${type}`,
          where: `${where}/responses/${status}/content/${pointer(type).slice(2)}`,
          media,
        });
      }
    }
  }
  return found;
}

const isBinary = (schema: Json) => schema?.type === "string" && schema?.format === "binary";

describe("the OpenAPI document", () => {
  let document: Json;
  let cleanup: () => void;
  beforeAll(async () => {
    const gateway = await testGateway();
    cleanup = gateway.cleanup;
    const response = await gateway.app.request("/v2/openapi.json");
    expect(response.status).toBe(200);
    document = await response.json();
  });
  afterAll(() => cleanup());

  it("gives every operation an id, a summary, a description and declared tags", () => {
    const declared = new Set(document.tags.map((t: { name: string }) => t.name));
    const all = operations(document);
    expect(all.length).toBeGreaterThan(60);
    const problems = all.flatMap(({ name, operation }) => [
      ...(operation.operationId ? [] : [`${name}: no operationId`]),
      ...(operation.summary ? [] : [`${name}: no summary`]),
      ...(operation.description?.length > 20 ? [] : [`${name}: no description`]),
      ...(operation.tags?.length > 0 ? [] : [`${name}: no tags`]),
      ...(operation.tags ?? [])
        .filter((t: string) => !declared.has(t))
        .map((t: string) => `${name}: undeclared tag ${t}`),
    ]);
    expect(problems).toEqual([]);
    for (const tag of document.tags) expect(tag.description, tag.name).toBeTruthy();
  });

  it("serves the text of every route the contracts describe, and no other", () => {
    // The webhooks section's operations are made from the events' own text (webhook-documents.ts).
    const served = operations(document)
      .filter(({ where }) => where.startsWith("#/paths/"))
      .map(({ operation }) => operation);
    expect(served.map((operation) => operation.operationId).sort()).toEqual(
      Object.keys(operationText).sort(),
    );
    for (const operation of served) {
      const { summary, description } = operationText[operation.operationId as keyof typeof operationText];
      expect({ summary: operation.summary, description: operation.description }).toEqual({
        summary,
        description,
      });
    }
  });

  it("has an example on every request body, response body and webhook payload (images' bytes aside)", () => {
    const missing = bodies(document)
      .filter(({ media }) => !isBinary(media.schema) && media.example === undefined)
      .map(({ name }) => name);
    expect(missing).toEqual([]);
    const payloads = Object.keys(document.webhooks);
    expect(payloads.sort()).toEqual([...webhookEventKinds].sort());
  });

  it("validates every example against the schema it illustrates", () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    for (const format of ["int32", "int64", "float", "double", "password", "binary"])
      ajv.addFormat(format, true);
    ajv.addSchema(document, "doc");
    const failures: string[] = [];
    let checked = 0;
    for (const { name, where, media } of bodies(document)) {
      if (media.example === undefined) continue;
      const validate = ajv.compile({ $ref: `doc${where}/schema` });
      checked++;
      if (!validate(media.example)) failures.push(`${name}: ${ajv.errorsText(validate.errors)}`);
    }
    for (const [name, schema] of Object.entries<Json>(document.components.schemas)) {
      if (schema.example === undefined) continue;
      const validate = ajv.compile({ $ref: `doc#/components/schemas/${name}` });
      checked++;
      if (!validate(schema.example)) failures.push(`schema ${name}: ${ajv.errorsText(validate.errors)}`);
    }
    expect(failures).toEqual([]);
    expect(checked).toBeGreaterThan(150);
  });

  it("keeps no example for an operation that does not exist", () => {
    const ids = new Set(operations(document).map(({ operation }) => operation.operationId));
    expect(Object.keys(operationExamples).filter((id) => !ids.has(id))).toEqual([]);
  });

  it("puts every operation within reach of one base URL: the API under /v2, the authorization server at the root", () => {
    expect(document.servers).toEqual([expect.objectContaining({ url: "/v2" })]);
    for (const { name, operation } of operations({ paths: document.paths })) {
      const path = name.split(" ")[1]!;
      const atRoot = path.startsWith("/oauth/") || path.startsWith("/.well-known/");
      expect(operation.servers?.[0]?.url, name).toBe(atRoot ? "/" : undefined);
    }
  });
});
