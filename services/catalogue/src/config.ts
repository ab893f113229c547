import { baseConfigSchema } from "@cheese/service-kit/launch";

/** The catalogue reads only the variables every service reads (docs/operations.md "Running it"). */
export const catalogueConfigSchema = baseConfigSchema;
export type CatalogueConfig = typeof catalogueConfigSchema._output;
