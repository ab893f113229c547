import { randomUUID } from "node:crypto";
import type { Document as MongoDocument } from "mongodb";
import { filterFields, versionedName } from "./declarations.ts";
import type { CollectionDefinition, Filter, QueryDefinition } from "./port.ts";
import { sortWithIdTieBreak } from "./sort.ts";

/**
 * Asks a real MongoDB how it would run each declared query (explain), on collections made by
 * `defineProjection`, and says what is wrong: a collection scan where the query does not declare
 * that it may scan, or an in-memory sort where it asks for one. For tests where MongoDB runs.
 */
export async function queryPlanProblems(url: string, collections: CollectionDefinition[]): Promise<string[]> {
  const database = `plans_${randomUUID().replaceAll("-", "")}`;
  // Imported here: the MongoDB driver loads only when a plan is checked (this module is exported
  // from the package's main entry, which the embedded setup loads).
  const [{ MongoClient }, { createMongoReadModels }] = await Promise.all([
    import("mongodb"),
    import("./mongo.ts"),
  ]);
  const store = await createMongoReadModels({ url, database });
  const client = await new MongoClient(url).connect();
  const problems: string[] = [];
  try {
    await store.defineProjection({ name: "plans", version: 1, collections });
    const db = client.db(database);
    for (const definition of collections) {
      const collection = db.collection<MongoDocument & { _id: number }>(versionedName(definition.name, 1));
      // A few documents, so the planner has statistics rather than an empty collection.
      await collection.insertMany(
        Array.from({ length: 20 }, (_, i) => ({ _id: i + 1, _revision: 1, ...sample(definition, i) })),
      );
      for (const query of definition.queries) {
        for (const filter of variants(query)) {
          const live = { $and: [filter, { _deleted: { $ne: true } }] };
          const plan = query.groupBy
            ? await collection
                .aggregate([{ $match: live }, { $group: { _id: `$${query.groupBy}`, count: { $sum: 1 } } }])
                .explain("queryPlanner")
            : await collection
                .find(live, query.sort ? { sort: sortWithIdTieBreak(query.sort) } : {})
                .explain("queryPlanner");
          const stages = stagesOf(plan);
          const label = `${definition.name}: "${query.name}" with ${JSON.stringify(filter)}`;
          if (stages.includes("COLLSCAN") && !query.scans) problems.push(`${label} scans the collection`);
          if (query.sort && stages.includes("SORT")) problems.push(`${label} sorts in memory`);
        }
      }
    }
  } finally {
    await client.db(database).dropDatabase();
    await client.close();
    await store.close();
  }
  return problems;
}

/** The declared example filter, and the same without its optional fields. */
function variants(query: QueryDefinition): Filter[] {
  const optional = new Set(query.optional ?? []);
  if (optional.size === 0) return [query.filter];
  const strip = (filter: Filter): Filter =>
    Object.fromEntries(
      Object.entries(filter).flatMap(([key, value]): [string, unknown][] => {
        if (key === "$and" || key === "$or" || key === "$nor") {
          const branches = (value as Filter[]).map(strip).filter((branch) => Object.keys(branch).length > 0);
          return branches.length > 0 ? [[key, branches]] : [];
        }
        return optional.has(key) ? [] : [[key, value]];
      }),
    );
  return [query.filter, strip(query.filter)];
}

/** Values for every field the definition's queries test, varied per document. */
function sample(definition: CollectionDefinition, i: number): Record<string, unknown> {
  const fields = new Set(definition.queries.flatMap((query) => [...filterFields(query.filter)]));
  for (const index of definition.indexes) for (const key of Object.keys(index.keys)) fields.add(key);
  fields.delete("_id");
  const document: Record<string, unknown> = {};
  for (const field of fields) {
    const path = field.split(".");
    let node = document;
    for (const part of path.slice(0, -1)) {
      node[part] ??= {};
      node = node[part] as Record<string, unknown>;
    }
    node[path[path.length - 1]!] = `value-${i % 5}`;
  }
  return document;
}

function stagesOf(plan: MongoDocument): string[] {
  const stages: string[] = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "rejectedPlans") continue;
        if (key === "stage" && typeof value === "string") stages.push(value);
        walk(value);
      }
    }
  };
  walk(plan);
  return stages;
}
