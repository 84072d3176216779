// What the store's tables need from a database, whichever engine: run a statement, read rows, and run a
// function inside one all-or-nothing transaction. SQL is written once with `?` placeholders, in the subset
// of SQL both SQLite and PostgreSQL speak (ON CONFLICT, RETURNING, CAST ... AS BIGINT).

export type SqlValue = string | number | null | Buffer;

export interface SqlExecutor {
  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** Runs a statement; resolves with the number of rows it changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /**
   * Appended to a SELECT that must lock the rows it reads until the transaction ends: ' FOR UPDATE' on
   * PostgreSQL; '' on SQLite, whose write transaction (BEGIN IMMEDIATE) already excludes every other writer.
   */
  readonly forUpdate: string;
  /**
   * Appended to a SELECT that claims rows for this transaction and passes over those another transaction holds
   * (' FOR UPDATE SKIP LOCKED' on PostgreSQL; '' on SQLite, where no other transaction runs meanwhile).
   */
  readonly skipLocked: string;
}

export interface SqlDriver extends SqlExecutor {
  readonly engine: 'sqlite' | 'postgres';
  /** Where the data is: the SQLite file's path, or the PostgreSQL URL without its password. */
  readonly location: string;
  /** Commits when fn resolves, rolls back when it throws. Statements of fn go through `tx` only. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** The schema version the database is at (readiness: reachable and migrated). */
  schemaVersion(): Promise<number>;
  /** The database's time, in milliseconds since the epoch (the clock every server on it shares). */
  clock(): Promise<number>;
  close(): Promise<void>;
}

export async function one<T>(executor: SqlExecutor, sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
  return (await executor.all<T>(sql, params))[0];
}

type Camel<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;
/** A row whose snake_case columns are named as the store's camelCase fields. */
export type CamelRow<Row> = { [Column in keyof Row as Camel<Column & string>]: Row[Column] };

/** The row's columns as the store's fields (`account_id` → `accountId`), so a table maps rows in one place. */
export function camelRow<Row extends object>(row: Row): CamelRow<Row> {
  return Object.fromEntries(
    Object.entries(row).map(([column, value]) => [
      column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase()),
      value,
    ]),
  ) as CamelRow<Row>;
}
