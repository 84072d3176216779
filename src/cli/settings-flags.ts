// A settings table (src/settings) as commander flags: each row's flag, its help with the default and the
// environment variable, the parsing of its value (a bad one is a usage error, exit 2), and back from commander's
// values to the rows' names.

import { type Command, InvalidArgumentError, Option } from 'commander';
import {
  checkValue,
  flagOf,
  type FlagsOf,
  type SettingRow,
  type SettingsTable,
  valueNameOf,
} from '../settings/setting.js';
import { messageOf } from '../api/errors.js';

/** A row's own parsing of one flag value, where the table's type is not enough (e.g. --trust-proxy's entries). */
export type FlagParser = (value: string, previous: unknown) => unknown;

/** The default as `--help` shows it; commander adds literal defaults itself when it applies them. */
function helpOf(row: SettingRow): string {
  const notes = [
    row.env && `env ${row.env}`,
    row.defaultText !== undefined ? `default: ${row.defaultText}` : undefined,
  ].filter(Boolean);
  return notes.length === 0 ? row.help : `${row.help} (${notes.join('; ')})`;
}

/** A whole number in the flag's unit (seconds for an option in milliseconds), checked by the row's bounds. */
function wholeParser(flag: string, row: SettingRow & { type: 'whole' }): FlagParser {
  const scale = row.flagInSeconds ? 1000 : 1;
  const bounds = {
    ...row,
    min: Math.ceil(row.min / scale),
    max: row.max === undefined ? undefined : Math.floor(row.max / scale),
  };
  return (value) => (checkValue(flag, bounds, value, true) as number) * scale;
}

/** A number from 0 to 1, checked by the row. */
const fractionParser =
  (flag: string, row: SettingRow): FlagParser =>
  (value) =>
    checkValue(flag, row, value, true);

/** Comma-separated, repeatable: the entries so far. */
const listParser: FlagParser = (value, previous) => [
  ...((previous as string[] | undefined) ?? []),
  ...value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== ''),
];

function optionOf(name: string, row: SettingRow, parse: FlagParser | undefined): Option {
  const long = flagOf(name, row) as string;
  const placeholder = valueNameOf(row);
  const flags = `${row.flag || long}${placeholder ? ` <${placeholder}>` : ''}`;
  const option = new Option(flags, helpOf(row));
  if (row.type === 'choice') option.choices(row.choices);
  const parser =
    parse ??
    (row.type === 'whole'
      ? wholeParser(long, row)
      : row.type === 'fraction'
        ? fractionParser(long, row)
        : row.type === 'list'
          ? listParser
          : undefined);
  if (parser) {
    option.argParser((value: string, previous: unknown) => {
      try {
        return parser(value, previous);
      } catch (error) {
        // commander reports it as a usage error (exit 2), not a crash with a stack trace.
        throw new InvalidArgumentError(messageOf(error));
      }
    });
  }
  // A row read from the environment gets no default here: its absence lets the environment apply.
  if (row.default !== undefined && row.env === undefined && !(row.type === 'switch')) {
    const shown = row.type === 'whole' && row.flagInSeconds ? row.default / 1000 : row.default;
    option.default(row.default, String(shown));
  }
  return option;
}

/** Adds the flags of `table` to `command`; `parsers` gives rows their own parsing. */
export function addSettingFlags(
  command: Command,
  table: SettingsTable,
  parsers: Partial<Record<string, FlagParser>> = {},
): Command {
  for (const [name, row] of Object.entries(table)) {
    if (row.flag !== false) command.addOption(optionOf(name, row, parsers[name]));
  }
  return command;
}

/** The values of `table`'s flags that commander holds, keyed by the rows' names (`--output` → outDir). */
export function settingFlags<T extends SettingsTable>(command: Command, table: T): FlagsOf<T> {
  const values = command.opts();
  const flags: Record<string, unknown> = {};
  for (const option of command.options) {
    const name = Object.keys(table).find((each) => {
      const row = table[each] as SettingRow;
      return row.flag !== false && option.long === flagOf(each, row);
    });
    if (name !== undefined && values[option.attributeName()] !== undefined) {
      const value = values[option.attributeName()];
      // `--no-ui` gives ui: false; an untyped switch that defaults to false stays absent.
      flags[name] = value;
    }
  }
  return flags as FlagsOf<T>;
}

/**
 * A library message in the CLI's words: the library names a setting as `name` (in backticks); here it becomes
 * the setting's flag, so `choose another \`port\`` reads "choose another --port".
 */
export function inFlagWords(message: string, tables: readonly SettingsTable[]): string {
  return message.replace(/`(\w+)`/g, (text, name: string) => {
    const table = tables.find((each) => Object.hasOwn(each, name));
    return (table && flagOf(name, table[name] as SettingRow)) ?? text;
  });
}
