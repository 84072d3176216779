// The data directory of the local service (--data-dir > RMBG_DATA_DIR > the platform's user data dir)
// and the store in it, opened for one admin command and always closed again.

import { dataDirOf } from '../config/setting-rules.js';
import { openStore, type Store } from '../store/index.js';

export { dataDirOf };

export function withLocalStore<T>(flag: string | undefined, use: (store: Store) => T): T {
  const store = openStore(dataDirOf(flag));
  try {
    return use(store);
  } finally {
    store.close();
  }
}
