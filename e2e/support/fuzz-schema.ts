import fc from "fast-check";

/**
 * fast-check arbitraries from the JSON Schemas of the served OpenAPI document: values the schema
 * accepts (`valid`), values at and just past its limits (`boundary`), and values no schema in this
 * API accepts (`hostile`). Only the keywords the document uses are read.
 */
export type Schema = { [key: string]: unknown };
export type Arb = fc.Arbitrary<unknown>;

/** Strings worth sending wherever a string goes: encodings, injections, path tricks, controls. */
const nastyStrings = [
  "",
  " ",
  "\u0000",
  "\ud800",
  "\udfff\ud800",
  "\u202e\u0041",
  "💥🧀",
  "../../etc/passwd",
  "..%2f..%2f",
  "%00",
  "%ff%fe",
  "%c0%af",
  "%2e%2e",
  "'; DROP TABLE cheeses; --",
  '{"$gt": ""}',
  "$where",
  "__proto__",
  "constructor",
  "<script>alert(1)</script>",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the Log4Shell probe, as sent
  "${jndi:ldap://127.0.0.1/x}",
  "\r\nX-Injected: 1",
  "NaN",
  "-0",
  "1e309",
  "9007199254740993",
  "null",
  "true",
];

const nastyNumbers = [
  0,
  -0,
  -1,
  0.5,
  -1.5,
  2 ** 31,
  -(2 ** 31) - 1,
  2 ** 53 + 2,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  1e-300,
];

/** JSON nested far deeper than any parser's comfort: objects or arrays, 2,000 levels. */
export function deepNesting(levels = 2000): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { a: value };
  return value;
}

export class Schemas {
  constructor(private readonly document: Schema) {}

  /** Follows `$ref` (local JSON pointers only) until a schema without one. */
  resolve(schema: Schema): Schema {
    let current = schema;
    for (let hops = 0; typeof current.$ref === "string" && hops < 20; hops++) {
      const path = (current.$ref as string).replace(/^#\//, "").split("/");
      let target: unknown = this.document;
      for (const part of path) target = (target as Schema)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
      current = {
        ...(target as Schema),
        ...Object.fromEntries(Object.entries(current).filter(([k]) => k !== "$ref")),
      };
    }
    return current;
  }

  /** Values the schema accepts (formats and patterns included, lengths kept small). */
  valid(raw: Schema, depth = 0): Arb {
    const schema = this.resolve(raw);
    if ("const" in schema) return fc.constant(schema.const);
    if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
    for (const key of ["oneOf", "anyOf"] as const) {
      const options = schema[key];
      if (Array.isArray(options)) return fc.oneof(...options.map((o) => this.valid(o as Schema, depth + 1)));
    }
    if (Array.isArray(schema.allOf)) {
      return this.valid(Object.assign({}, ...schema.allOf.map((s) => this.resolve(s as Schema))), depth);
    }
    const types = Array.isArray(schema.type)
      ? (schema.type as string[])
      : [schema.type as string | undefined];
    if (types.length > 1) return fc.oneof(...types.map((type) => this.valid({ ...schema, type }, depth)));
    switch (types[0]) {
      case "string":
        return this.validString(schema);
      case "integer":
        return fc.integer({
          min: Math.max(Number(schema.minimum ?? -1_000_000), Number.MIN_SAFE_INTEGER),
          max: Math.min(Number(schema.maximum ?? 1_000_000), 1_000_000_000),
        });
      case "number": {
        const min = Number(schema.minimum ?? schema.exclusiveMinimum ?? -1_000_000);
        const max = Number(schema.maximum ?? 1_000_000);
        return fc
          .double({ min, max, noNaN: true, noDefaultInfinity: true })
          .filter((n) => schema.exclusiveMinimum === undefined || n > Number(schema.exclusiveMinimum))
          .map((n) => Math.round(n * 100) / 100)
          .filter(
            (n) =>
              n >= min &&
              n <= max &&
              (schema.exclusiveMinimum === undefined || n > Number(schema.exclusiveMinimum)),
          );
      }
      case "boolean":
        return fc.boolean();
      case "null":
        return fc.constant(null);
      case "array": {
        const items = this.valid((schema.items as Schema | undefined) ?? {}, depth + 1);
        const minLength = Number(schema.minItems ?? 0);
        const maxLength = Math.max(minLength, Math.min(Number(schema.maxItems ?? 4), 4));
        return fc.array(items, { minLength, maxLength });
      }
      case "object":
      case undefined: {
        const properties = (schema.properties ?? {}) as Record<string, Schema>;
        const writable = Object.entries(properties).filter(([, p]) => !this.resolve(p).readOnly);
        if (writable.length === 0 || depth > 6)
          return types[0] === "object" ? fc.constant({}) : fc.constant("x");
        const required = ((schema.required ?? []) as string[]).filter((k) => k in properties);
        return fc.record(Object.fromEntries(writable.map(([name, p]) => [name, this.valid(p, depth + 1)])), {
          requiredKeys: required,
        });
      }
      default:
        return fc.constant(null);
    }
  }

  private validString(schema: Schema): Arb {
    const minLength = Number(schema.minLength ?? 0);
    const maxLength = Number(schema.maxLength ?? 64);
    const fits = (s: string) => s.length >= minLength && s.length <= maxLength;
    switch (schema.format) {
      case "date-time":
        return fc
          .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
          .map((d) => d.toISOString());
      case "date":
        return fc
          .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
          .map((d) => d.toISOString().slice(0, 10));
      case "email":
        return fc.emailAddress().filter(fits);
      case "uri":
        // Only addresses on this machine or ones that cannot resolve: a fuzz run never reaches out.
        return fc
          .tuple(
            fc.constantFrom("http://127.0.0.1:9/", "http://[::1]:9/"),
            fc.stringMatching(/^[a-z0-9/_-]{0,20}$/),
          )
          .map(([base, path]) => base + path)
          .filter(fits);
      case "binary":
        return fc.uint8Array({ maxLength: 256 });
    }
    if (typeof schema.pattern === "string") {
      return fc.stringMatching(new RegExp(schema.pattern)).filter(fits);
    }
    return fc.string({
      minLength,
      maxLength: Math.min(maxLength, Math.max(minLength, 40)),
      unit: "grapheme",
    });
  }

  /** Values at each limit the schema names, and one step beyond it. */
  boundary(raw: Schema): Arb {
    const schema = this.resolve(raw);
    const options: unknown[] = [];
    const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
    if (type === "string") {
      const min = Number(schema.minLength ?? 0);
      const max = Number(schema.maxLength ?? 10_000);
      options.push(
        "a".repeat(min),
        "é".repeat(max),
        "a".repeat(max + 1),
        "🧀".repeat(Math.ceil(max / 2) + 1),
      );
      if (min > 0) options.push("a".repeat(min - 1));
    } else if (type === "integer" || type === "number") {
      for (const key of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) {
        if (typeof schema[key] === "number") {
          const edge = schema[key] as number;
          options.push(edge, edge - 1, edge + 1, type === "number" ? edge + 1e-9 : edge);
        }
      }
      options.push(0, -1, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, 1.5);
    } else if (type === "array") {
      const item = schema.items ? this.valid(schema.items as Schema) : fc.constant("x");
      const max = Number(schema.maxItems ?? 200);
      return fc.oneof(
        fc.constant([]),
        fc.array(item, { minLength: Math.min(max, 60), maxLength: Math.min(max, 60) }),
        fc.constant(Array.from({ length: max + 1 }, (_, i) => i)),
      );
    } else if (Array.isArray(schema.enum)) {
      options.push(
        ...schema.enum.map((v) => (typeof v === "string" ? v.toUpperCase() : v)),
        `${schema.enum[0]} `,
      );
    } else {
      return this.hostile();
    }
    return fc.constantFrom(...options);
  }

  /** Wrong types, huge and nasty strings, deep nesting, prototype keys. */
  hostile(): Arb {
    return fc.oneof(
      fc.constantFrom<unknown>(null, true, false, [], {}, "", [null], { "": null }),
      fc.constantFrom(...nastyStrings),
      fc.constantFrom(...nastyNumbers),
      fc.constant("x".repeat(300_000)),
      fc.constant(deepNesting(50)),
      fc.constant(
        JSON.parse('{"__proto__": {"admin": true}, "constructor": {"prototype": {"admin": true}}}'),
      ),
      fc.constant({ $where: "sleep(10000)", $gt: "" }),
      fc.string({ unit: "binary", maxLength: 40 }),
      fc.jsonValue({ maxDepth: 3 }),
    );
  }

  /**
   * A body for `schema`: valid, valid with one field at a limit or hostile, an unknown field, or a
   * hostile whole.
   */
  body(raw: Schema): fc.Arbitrary<{ mode: string; value: unknown }> {
    const schema = this.resolve(raw);
    const valid = this.valid(schema);
    const properties = Object.keys((schema.properties ?? {}) as Record<string, Schema>);
    const withField = (mode: string, value: (name: string) => Arb) =>
      properties.length === 0
        ? this.hostile().map((v) => ({ mode, value: v }))
        : fc.tuple(valid, fc.constantFrom(...properties)).chain(([base, name]) =>
            value(name).map((v) => ({
              mode: `${mode}:${name}`,
              value: { ...(base as object), [name]: v },
            })),
          );
    const propertySchema = (name: string) => (schema.properties as Record<string, Schema>)[name] as Schema;
    return fc.oneof(
      { weight: 4, arbitrary: valid.map((value) => ({ mode: "valid", value })) },
      { weight: 2, arbitrary: withField("boundary", (name) => this.boundary(propertySchema(name))) },
      { weight: 2, arbitrary: withField("hostile", () => this.hostile()) },
      {
        weight: 1,
        arbitrary: valid.map((value) => ({
          mode: "unknown-field",
          value: { ...(value as object), isAdmin: true, id: 1 },
        })),
      },
      { weight: 1, arbitrary: this.hostile().map((value) => ({ mode: "hostile", value })) },
    );
  }
}
