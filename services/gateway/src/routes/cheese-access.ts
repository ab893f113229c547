import type { AccessRule } from "../auth/access.ts";
import { commonResponses, credentialResponses } from "./responses.ts";
import { routes } from "./route.ts";

/** cheesy_oauth with write:cheeses, for every cheese write. */
export const writeCheeses: AccessRule = { oauth: ["write:cheeses"] };

/**
 * Where the API names api_key alone (a cheese, the inventory), read:cheeses
 * tokens and customers' bearer tokens in too.
 */
export const readWithApiKey: AccessRule = { apiKey: true, bearer: true, oauth: ["read:cheeses"] };

/** What the access rule of a cheese route may answer. */
export const authResponses = credentialResponses("the credentials do not grant this operation");

/** A route of the catalogue: tagged Cheeses, with the answers of every one and its access rule's. */
export const cheeseRoute = routes({ tags: ["Cheeses"], responses: { ...commonResponses, ...authResponses } });
