// Setup of every unit test file, in worker threads whose files share one global scope (the
// threads pool without isolation, vitest.config.ts).
//
// Node's own fetch and the npm `undici` (which some tests import for its Agent and `request`)
// share one global dispatcher slot: the first of them to load fills it, and the npm one, loaded
// first, would then carry every later file's `fetch` with its own Agent, which refuses some of
// Node's requests (a `content-length` Node's fetch passes on). Making a `Headers` loads Node's
// fetch, so its own dispatcher is the one in the slot before any test file is imported.
new Headers();
