import { catalogueRpc, Inventory } from "@cheese/contracts";
import { callService } from "../rpc.ts";
import { authResponses, readWithApiKey } from "./cheese-access.ts";
import { commonResponses, jsonResponse } from "./responses.ts";
import { type Route, route } from "./route.ts";

const getInventory = route(
  {
    method: "get",
    path: "/store/inventory",
    operationId: "getInventory",
    tags: ["Store"],
    access: readWithApiKey,
    responses: {
      ...commonResponses,
      ...authResponses,
      200: jsonResponse("inventory map: every status with its count", Inventory),
    },
  },
  (deps) => async (c) => {
    const counts = await callService(deps, c, catalogueRpc.inventory, {});
    return c.json(counts, 200);
  },
);

export const inventoryRoutes: Route[] = [getInventory];
