import { CelScalar, celEnv, isCelError, parse, plan } from "@bufbuild/cel";
import { type WebhookEventKind, webhookEventExample } from "@cheese/contracts";
import { validationFailed } from "@cheese/service-kit";

/**
 * Payload filters: a CEL expression over a delivery's envelope (`type`, `created_at`, `data`),
 * evaluated with `@bufbuild/cel` (docs/webhooks.md "Payload filters" says why that library).
 */

/** The longest filter accepted, in characters. */
export const MAX_FILTER_LENGTH = 1024;
/**
 * How deeply comprehensions (`all`, `exists`, `map`, `filter`) may nest, and how many elements a
 * list literal may have: with the length, they bound one evaluation's work (CEL has no loops or
 * recursion; what is left is comprehensions over lists, the event's own or written out).
 */
const MAX_COMPREHENSION_DEPTH = 2;
const MAX_LIST_LITERAL = 32;

/** What a filter sees of an event: its envelope without the id. */
export interface FilterInput {
  type: string;
  created_at: string;
  data: unknown;
}

export type CompiledFilter = (input: FilterInput) => { matched: boolean; error?: string };

const env = celEnv({
  variables: { type: CelScalar.STRING, created_at: CelScalar.STRING, data: CelScalar.DYN },
});

/** An absent field or key: a filter written for some kinds meets an event of another. */
const missingField = /^(field not found|no such key)/;

/** 422 naming `filter` (the spec's error body). */
const invalid = (message: string) =>
  validationFailed("request body failed validation", [{ field: "filter", message }]);

/** Parses and plans a filter; throws a 422 naming `filter` for a syntax error or one past the bounds. */
export function compileFilter(source: string): CompiledFilter {
  if (source.length > MAX_FILTER_LENGTH) throw invalid(`must be at most ${MAX_FILTER_LENGTH} characters`);
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (error) {
    throw invalid(`is not a CEL expression: ${(error as Error).message}`);
  }
  const shape = shapeOf(parsed.expr);
  if (shape.depth > MAX_COMPREHENSION_DEPTH)
    throw invalid(
      `may nest comprehensions (all, exists, map, filter) at most ${MAX_COMPREHENSION_DEPTH} deep`,
    );
  if (shape.longestList > MAX_LIST_LITERAL)
    throw invalid(`may write out lists of at most ${MAX_LIST_LITERAL} elements`);
  const run = plan(env, parsed);
  return (input) => {
    let result: ReturnType<typeof run>;
    try {
      result = run(toCel(input));
    } catch (error) {
      return { matched: false, error: (error as Error).message };
    }
    if (isCelError(result)) return { matched: false, error: result.message };
    if (typeof result !== "boolean") return { matched: false, error: "the filter's value is not a bool" };
    return { matched: result };
  };
}

/**
 * Compiles a filter and checks its types against the example event of each kind it will see
 * (CEL's types are those of the envelope: `type` and `created_at` strings, `data` dynamic, so the
 * examples stand for `data`'s declared shape): a value that is not a bool, an operator or function
 * applied to the wrong types, an unknown variable, or a field that none of the kinds has is 422
 * naming `filter`. A field missing from some kinds only is fine (those events are not matched).
 */
export function checkFilter(source: string, kinds: readonly WebhookEventKind[]): CompiledFilter {
  const filter = compileFilter(source);
  const outcomes = kinds.map((kind) => ({ kind, ...filter(webhookEventExample(kind)) }));
  const wrong = outcomes.find((outcome) => outcome.error && !missingField.test(outcome.error));
  if (wrong) throw invalid(`does not type-check on ${wrong.kind}: ${wrong.error}`);
  if (outcomes.length > 0 && outcomes.every((outcome) => outcome.error))
    throw invalid(`refers to a field none of ${kinds.join(", ")} has: ${outcomes[0]?.error}`);
  return filter;
}

/** JSON numbers are CEL doubles (`data.total > 100.0`); integers compare with them as CEL allows. */
function toCel(input: FilterInput) {
  return { type: input.type, created_at: input.created_at, data: input.data as never };
}

/** How deeply comprehensions nest in a parsed expression, and its longest list literal. */
function shapeOf(node: unknown): { depth: number; longestList: number } {
  const shape = { depth: 0, longestList: 0 };
  if (node === null || typeof node !== "object" || node instanceof Uint8Array) return shape;
  for (const value of Array.isArray(node) ? node : Object.values(node)) {
    const inner = shapeOf(value);
    shape.depth = Math.max(shape.depth, inner.depth);
    shape.longestList = Math.max(shape.longestList, inner.longestList);
  }
  const kind = (node as { exprKind?: { case?: string; value?: { elements?: unknown[] } } }).exprKind;
  if (kind?.case === "comprehensionExpr") shape.depth++;
  if (kind?.case === "listExpr")
    shape.longestList = Math.max(shape.longestList, kind.value?.elements?.length ?? 0);
  return shape;
}
