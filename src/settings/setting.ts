// How a setting is declared: one row gives its library option, its flag, its environment variable, its default,
// its bounds and its text. The tables (engine.ts, server.ts, remove.ts) hold the rows; the CLI's flags
// (cli/settings-flags.ts), the library's option types and checks (here) and the docs rows (docs-rows.ts) come
// from them. Nothing heavy is imported: `rmbg --help` reads the tables.

import { RmbgError } from '../api/errors.js';
import { checkWholeNumber } from '../api/whole-number.js';

interface Row {
  /** One line for `--help` (and the docs row, unless `doc` says it in the library's words). */
  help: string;
  /** The docs row's text, when `help` speaks of the flag (e.g. of `--no-ui` for the option `ui`). */
  doc?: string;
  /** The default in words, when it is not one value (e.g. "all cores"); shown in `--help` and the docs. */
  defaultText?: string;
  /** Read when neither the flag nor the option is given (then the settings file, where src/config allows it). */
  env?: string;
  /** The flag when it is not the option's name in kebab-case (e.g. `-o, --output`); false: no flag. */
  flag?: string | false;
  /** A flag of the CLI only: no library option. */
  cliOnly?: true;
  /** The library requires the option (the CLI's flag has a default). */
  requiredInLibrary?: true;
  /** The default in the library's docs, when the CLI's (its environment variable, the settings file) does not apply. */
  libraryDefault?: string;
  /**
   * The part of `rmbg serve` that reads it, which takes it by the row's name (settingsFor): the service's use
   * cases or the HTTP app. Without it, the row is read where its table is resolved (createServer, the batch).
   */
  to?: 'service' | 'app';
  /** The user settings file may hold it (`rmbg config set`): read when neither the flag nor the environment gives it. */
  stored?: true;
}

export interface WholeRow extends Row {
  type: 'whole';
  default?: number;
  min: number;
  max?: number;
  unit?: 'seconds' | 'milliseconds';
  /** The flag takes seconds for an option in milliseconds (`--timeout` for `timeoutMs`). */
  flagInSeconds?: true;
}
/** A number from 0 to 1 (a confidence threshold). */
export interface FractionRow extends Row {
  type: 'fraction';
  default?: number;
}
export interface TextRow extends Row {
  type: 'text';
  default?: string;
  /** The flag's value in `--help`: `--store <url>`. */
  placeholder: string;
}
/** A boolean: `--name`, or `--no-name` when it defaults to true. */
export interface SwitchRow extends Row {
  type: 'switch';
  default?: boolean;
}
export interface ChoiceRow extends Row {
  type: 'choice';
  choices: readonly string[];
  default?: string;
}
/** Several values: a comma-separated, repeatable flag; an array option. */
export interface ListRow extends Row {
  type: 'list';
  placeholder: string;
  default?: never;
}

export type SettingRow = WholeRow | FractionRow | TextRow | SwitchRow | ChoiceRow | ListRow;
export type SettingsTable = Readonly<Record<string, SettingRow>>;

type ValueOf<R> = R extends { type: 'whole' | 'fraction' }
  ? number
  : R extends { type: 'switch' }
    ? boolean
    : R extends { type: 'list' }
      ? readonly string[]
      : R extends { type: 'choice'; choices: readonly (infer C)[] }
        ? C
        : string;

/** The library's options of a table: every row but the CLI's own, all optional. */
export type OptionsOf<T extends SettingsTable> = {
  -readonly [K in keyof T as T[K] extends { cliOnly: true } ? never : K]?: ValueOf<T[K]>;
};

/** The values the CLI's flags of a table give, keyed by row name (cli/settings-flags.ts reads them). */
export type FlagsOf<T extends SettingsTable> = { -readonly [K in keyof T]?: ValueOf<T[K]> };

/** The rows that have a default, with it. */
export type DefaultsOf<T extends SettingsTable> = {
  -readonly [K in keyof T as T[K] extends { default: unknown } ? K : never]: ValueOf<T[K]>;
};

/** A row in seconds reaches its consumer in milliseconds (Node's timers count them), as `name` + `Ms`. */
type RuntimeName<K extends PropertyKey, R> = R extends { unit: 'seconds' } ? `${K & string}Ms` : K;

/** The settings one part of `rmbg serve` takes (the rows with `to`), by the rows' names, seconds as milliseconds. */
export type SettingsFor<T extends SettingsTable, To extends string> = {
  -readonly [K in keyof T as T[K] extends { to: To } ? RuntimeName<K, T[K]> : never]: ValueOf<T[K]>;
};

/** The one place a row's seconds become milliseconds: the settings of the rows with `to`, from checked options. */
export function settingsFor<T extends SettingsTable, To extends string>(
  table: T,
  to: To,
  checked: OptionsOf<T>,
): SettingsFor<T, To> {
  const settings: Record<string, unknown> = {};
  for (const [name, row] of Object.entries(table)) {
    if (row.to !== to) continue;
    const value = (checked as Record<string, unknown>)[name];
    if (row.type === 'whole' && row.unit === 'seconds') settings[`${name}Ms`] = (value as number) * 1000;
    else settings[name] = value;
  }
  return settings as SettingsFor<T, To>;
}

export function defaultsOf<T extends SettingsTable>(table: T): DefaultsOf<T> {
  const defaults: Record<string, unknown> = {};
  for (const [name, row] of Object.entries(table)) if (row.default !== undefined) defaults[name] = row.default;
  return defaults as DefaultsOf<T>;
}

/** The long flag of a row: rateLimit → --rate-limit; `-o, --output` → --output; undefined when it has none. */
export function flagOf(name: string, row: SettingRow): string | undefined {
  if (row.flag === false) return undefined;
  if (row.flag !== undefined) return row.flag.split(/,\s*/).pop();
  const kebab = name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
  return row.type === 'switch' && row.default === true ? `--no-${kebab}` : `--${kebab}`;
}

/** The name of a flag's value: `--store <url>`, `--port <n>`, `--timeout <seconds>`; none for a switch. */
export function valueNameOf(row: SettingRow): string | undefined {
  switch (row.type) {
    case 'switch':
      return undefined;
    case 'whole':
      return row.unit === 'seconds' || row.flagInSeconds ? 'seconds' : 'n';
    case 'choice':
      return 'value';
    case 'fraction':
      return '0..1';
    default:
      return row.placeholder;
  }
}

/** The rows of several tables as one (a command's flags, a function's options). */
export function joinTables<A extends SettingsTable, B extends SettingsTable>(a: A, b: B): A & B {
  for (const name of Object.keys(b)) if (name in a) throw new Error(`setting ${name} is declared twice`);
  return { ...a, ...b };
}

/**
 * A value checked against its row; `name` is how the caller knows it (an option name, or a flag). A flag's text
 * may spell a whole number ('8'); an option must be a number, so a string never reaches a timer or a pool.
 */
export function checkValue(name: string, row: SettingRow, value: unknown, fromText = false): unknown {
  switch (row.type) {
    case 'whole':
      if (typeof value === 'string' && !fromText)
        throw new RmbgError('invalid_option', `${name} must be a number, not a string; got '${value}'`);
      return checkWholeNumber(name, value, row.min, row.max);
    case 'fraction':
      return checkFraction(name, value, fromText);
    case 'switch':
      if (typeof value === 'boolean') return value;
      throw new RmbgError('invalid_option', `${name} must be true or false; got ${JSON.stringify(value)}`);
    case 'choice':
      if (typeof value === 'string' && row.choices.includes(value)) return value;
      throw new RmbgError(
        'invalid_option',
        `${name} must be one of ${row.choices.join(', ')}; got ${JSON.stringify(value)}`,
      );
    case 'text':
      if (typeof value === 'string') return value;
      throw new RmbgError('invalid_option', `${name} must be a string; got ${JSON.stringify(value)}`);
    case 'list':
      if (Array.isArray(value) && value.every((entry) => typeof entry === 'string')) return value;
      throw new RmbgError('invalid_option', `${name} must be an array of strings; got ${JSON.stringify(value)}`);
  }
}

/**
 * A library caller's options checked against a table and completed with its defaults. Undefined means "the
 * default", as an absent flag does; a key the table lacks is refused, naming the allowed ones (a misspelt option
 * would otherwise be a silent no-op).
 */
export function checkOptions<T extends SettingsTable>(
  table: T,
  options: object,
  /** Options the caller checks itself (e.g. the image options), named before and after the table's in the message. */
  others: { before?: readonly string[]; after?: readonly string[] } = {},
): OptionsOf<T> & DefaultsOf<T> {
  const { before = [], after = [] } = others;
  const checked: Record<string, unknown> = { ...defaultsOf(table) };
  for (const [name, value] of Object.entries(options)) {
    if (before.includes(name) || after.includes(name)) continue;
    const row = Object.hasOwn(table, name) ? table[name] : undefined;
    if (row === undefined || row.cliOnly) {
      const allowed = Object.keys(table).filter((each) => !table[each]?.cliOnly);
      throw new RmbgError(
        'unknown_field',
        `unknown option '${name}'; allowed options: ${[...before, ...allowed, ...after].join(', ')}`,
      );
    }
    if (value !== undefined) checked[name] = checkValue(name, row, value);
  }
  return checked as OptionsOf<T> & DefaultsOf<T>;
}

/** A number from 0 to 1; a flag's text may spell one ('0.35', '.5', '1'). */
function checkFraction(name: string, value: unknown, fromText: boolean): number {
  const number =
    fromText && typeof value === 'string' && /^\s*(\d+(\.\d*)?|\.\d+)\s*$/.test(value) ? Number(value) : value;
  if (typeof number === 'number' && number >= 0 && number <= 1) return number;
  throw new RmbgError('invalid_option', `${name} must be a number from 0 to 1; got ${JSON.stringify(value)}`);
}
