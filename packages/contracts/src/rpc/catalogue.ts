import { defineRpc } from "@cheese/messaging";
import { z } from "zod";
import { Cheese, CheeseFields } from "../cheese.ts";

/** A cheese as the catalogue returns it, with the stream revision for ETags. */
export const CheeseReply = z.object({ cheese: Cheese, revision: z.number().int() });
export type CheeseReply = z.infer<typeof CheeseReply>;

export const catalogueRpc = {
  createCheese: defineRpc({
    subject: "catalogue.cheese.create",
    request: z.object({ fields: CheeseFields }),
    response: CheeseReply,
  }),
  getCheese: defineRpc({
    subject: "catalogue.cheese.get",
    request: z.object({ cheeseId: z.number().int().positive() }),
    response: CheeseReply,
  }),
};
