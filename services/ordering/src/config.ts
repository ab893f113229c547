import { baseConfigShape, duration } from "@cheese/service-kit/launch";
import { z } from "zod";

export const orderingConfigSchema = z.object({
  ...baseConfigShape,
  /** How long after placement an order is checked again and approved or cancelled (docs/ordering.md). */
  ORDER_AUTO_APPROVE_DELAY: duration("0s"),
});
export type OrderingConfig = z.infer<typeof orderingConfigSchema>;
