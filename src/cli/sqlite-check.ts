// Whether the SQLite driver loads here, for `rmbg doctor` beside the floor's checks (platform/native-parts.ts):
// it opens a database in memory through the store's own driver, so it lives above the store.

import { firstLine, type NativePart } from '../platform/native-parts.js';
import { sqliteSupport } from '../store/sqlite-connection.js';

export async function checkSqlite(): Promise<NativePart> {
  const support = await sqliteSupport().catch((error: unknown) => ({
    available: false as const,
    reason: firstLine(error),
  }));
  return support.available
    ? {
        name: 'SQLite',
        loads: true,
        version: `${support.driver} ${support.driverVersion}, SQLite ${support.sqliteVersion}`,
      }
    : { name: 'SQLite', loads: false, error: support.reason };
}
