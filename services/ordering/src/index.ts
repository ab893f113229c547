/** The service's one public entry: start it (the launcher and the container run it through this). */
export { start } from "./main.ts";
