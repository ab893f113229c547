// Owned by the issue that builds this area; see docs/architecture.md.
export {};
