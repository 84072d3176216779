// The store an admin command works on (--store URL > RMBG_STORE_URL > the data directory's SQLite file, with
// the data directory from --data-dir > RMBG_DATA_DIR > the platform's user data dir), opened for the command
// and always closed again.

import { dataDirOf } from '../config/setting-rules.js';
import { openStore, storeTarget, type Store } from '../store/index.js';

export { dataDirOf };

export interface StoreFlags {
  dataDir?: string;
  store?: string;
}

export async function withLocalStore<T>(flags: StoreFlags, use: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(storeTarget(flags.store, dataDirOf(flags.dataDir)));
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}
