import { Query } from "mingo";
import type { Document, Filter } from "./port.ts";

/**
 * A filter as a test of one document. The filters the services run on every read (top-level
 * fields by equality, `$in`, `$gt`/`$gte`/`$lt`/`$lte` of strings and numbers, combined with
 * `$and` and `$or`) become a plain function, with MongoDB's (mingo's) meaning: an array field
 * matches when one of its members does, comparisons hold between values of one type only, a
 * missing field matches none of these. Any other filter is mingo's `Query`, compiled as before.
 */
export function predicate(filter: Filter): (document: Document) => boolean {
  const fast = compile(filter);
  if (fast) return fast;
  const query = new Query(filter);
  return (document) => query.test(document);
}

type Test = (document: Document) => boolean;
type ValueTest = (value: unknown) => boolean;

const plain = (value: unknown): value is string | number | boolean =>
  typeof value === "string" ||
  (typeof value === "number" && !Number.isNaN(value)) ||
  typeof value === "boolean";
/** A value with an order of its own: a string, or a number that is not NaN. */
export const ordered = (value: unknown): value is string | number =>
  typeof value === "string" || (typeof value === "number" && !Number.isNaN(value));

function compile(filter: Filter): Test | undefined {
  const tests: Test[] = [];
  for (const [key, condition] of Object.entries(filter)) {
    let test: Test | undefined;
    if (key === "$and" || key === "$or") {
      if (!Array.isArray(condition) || condition.length === 0) return undefined;
      const branches: Test[] = [];
      for (const branch of condition as unknown[]) {
        if (typeof branch !== "object" || branch === null || Array.isArray(branch)) return undefined;
        const compiled = compile(branch as Filter);
        if (!compiled) return undefined;
        branches.push(compiled);
      }
      test =
        key === "$and"
          ? (document) => branches.every((branch) => branch(document))
          : (document) => branches.some((branch) => branch(document));
    } else {
      if (key.startsWith("$") || key.includes(".") || key === "__proto__") return undefined;
      const values = valueTests(condition);
      if (!values) return undefined;
      // Each condition on an array field may be met by another member, as in MongoDB.
      test = (document) => {
        const field = Object.hasOwn(document, key) ? document[key] : undefined;
        if (Array.isArray(field)) return values.every((value) => field.some(value));
        return values.every((value) => value(field));
      };
    }
    tests.push(test);
  }
  if (tests.length === 1) return tests[0];
  return (document) => {
    for (const test of tests) if (!test(document)) return false;
    return true;
  };
}

/** The tests of a field's value (or of a member of an array field), or undefined: use mingo. */
function valueTests(condition: unknown): ValueTest[] | undefined {
  if (plain(condition)) return [(value) => value === condition];
  if (typeof condition !== "object" || condition === null || Array.isArray(condition)) return undefined;
  if (Object.getPrototypeOf(condition) !== Object.prototype) return undefined;
  const tests: ValueTest[] = [];
  for (const [operator, operand] of Object.entries(condition)) {
    switch (operator) {
      case "$in": {
        if (!Array.isArray(operand) || !operand.every(plain)) return undefined;
        const values = new Set<unknown>(operand);
        tests.push((value) => values.has(value));
        break;
      }
      case "$gt":
      case "$gte":
      case "$lt":
      case "$lte": {
        if (!ordered(operand)) return undefined;
        const type = typeof operand;
        const bound = operand as string;
        tests.push(
          operator === "$gt"
            ? (value) => typeof value === type && (value as string) > bound
            : operator === "$gte"
              ? (value) => typeof value === type && (value as string) >= bound
              : operator === "$lt"
                ? (value) => typeof value === type && (value as string) < bound
                : (value) => typeof value === type && (value as string) <= bound,
        );
        break;
      }
      default:
        return undefined;
    }
  }
  return tests.length > 0 ? tests : undefined;
}
