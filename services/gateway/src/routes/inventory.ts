import { catalogueRpc, Inventory } from "@cheese/contracts";
import { forward } from "../rpc.ts";
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
  forward(catalogueRpc.inventory, 200, () => ({})),
);

export const inventoryRoutes: Route[] = [getInventory];
