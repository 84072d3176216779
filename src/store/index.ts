// The store's public surface: open a data directory's SQLite store, and the types it deals in.

export { openStore, STORE_FILE } from './open-store.js';
export { generateApiKey, hashApiKey } from './api-keys.js';
export * from './types.js';
