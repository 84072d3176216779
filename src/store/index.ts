// The store's public surface: open a store (a data directory's SQLite file or a PostgreSQL database), and the types it deals in.

export { openStore, storeTarget, STORE_FILE, STORE_URL_ENV, type StoreTarget } from './open-store.js';
export { generateApiKey, hashApiKey } from './api-keys.js';
export * from './types.js';
