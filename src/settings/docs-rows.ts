// The documentation's tables of flags and options, made from the settings tables. The docs hold them between
// `<!-- settings: NAME -->` and `<!-- /settings -->`; `npm run docs` writes them and a test checks they are current.

import { CALLER_DEFAULT_OPTIONS, enumValues, OPTION_FIELDS } from '../api/options.js';
import { BATCH_SETTINGS, CALL_TABLE, REMOVE_TABLE, SERVE_TABLE } from './index.js';
import { flagOf, type SettingRow, type SettingsTable, valueNameOf } from './setting.js';

const UNITS = { seconds: ' s', milliseconds: ' ms' } as const;

function defaultOf(row: SettingRow, inFlagUnit: boolean): string {
  const literal =
    row.default === undefined
      ? undefined
      : row.type === 'whole'
        ? inFlagUnit && row.flagInSeconds
          ? `\`${row.default / 1000}\` s`
          : `\`${row.default}\`${row.unit ? UNITS[row.unit] : ''}`
        : `\`${row.default}\``;
  const words = [row.env && `\`${row.env}\``, row.defaultText].filter(Boolean).join(', else ');
  if (literal !== undefined) return words ? `${words}, else ${literal}` : literal;
  if (words) return words;
  return row.type === 'switch' ? '`false`' : 'none';
}

const cell = (text: string) => text.replace(/\|/g, '\\|');
/** Prose in a cell: angle brackets would be read as HTML. */
const prose = (text: string) => cell(text).replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The library's options of `table`: name, default, meaning. */
function optionRows(table: SettingsTable): string {
  const rows = Object.entries(table)
    .filter(([, row]) => !row.cliOnly)
    .map(([name, row]) => {
      const byDefault = row.requiredInLibrary ? 'required' : (row.libraryDefault ?? defaultOf(row, false));
      return `| \`${name}\` | ${prose(byDefault)} | ${prose(row.doc ?? row.help)} |`;
    });
  return ['| option | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** A command's flags: the image options' (for `rmbg remove`) and the table's. */
function flagRows(table: SettingsTable, withImageOptions: boolean): string {
  const image = withImageOptions
    ? OPTION_FIELDS.filter((field) => field.kind !== 'enum' || field.values.length > 1).map((field) => {
        const flag = `--${field.name.replace(/_/g, '-')}`;
        const value =
          field.kind === 'boolean'
            ? ''
            : field.kind === 'color'
              ? ' <color>'
              : ` <${enumValues(field, 'local').join('|')}>`;
        const byDefault =
          field.name === 'size' || field.name === 'format' ? CALLER_DEFAULT_OPTIONS[field.name] : undefined;
        const shown = byDefault ? `\`${byDefault}\`` : field.kind === 'boolean' ? 'off' : 'none';
        return `| \`${cell(flag + value)}\` | ${shown} | ${prose(field.description)} |`;
      })
    : [];
  const rows = Object.entries(table)
    .filter(([, row]) => row.flag !== false)
    .map(([name, row]) => {
      // The docs list a choice's values where --help (which lists them after the text) says <value>.
      const valueName = row.type === 'choice' ? row.choices.join('|') : valueNameOf(row);
      const flag = `${row.flag || flagOf(name, row)}${valueName ? ` <${valueName}>` : ''}`;
      // A switch is off until typed (for `--no-ui`, off means the page is served).
      const byDefault = row.type === 'switch' ? 'off' : defaultOf(row, true);
      return `| \`${cell(flag)}\` | ${prose(byDefault)} | ${prose(row.help)} |`;
    });
  return ['| flag | default | meaning |', '|---|---|---|', ...image, ...rows].join('\n');
}

/** Every generated table, by the name its markers carry. */
export const DOC_TABLES: Record<string, () => string> = {
  'serve-flags': () => flagRows(SERVE_TABLE, false),
  'remove-flags': () => flagRows(REMOVE_TABLE, true),
  'server-options': () => optionRows(SERVE_TABLE),
  'call-options': () => optionRows(CALL_TABLE),
  'batch-options': () => optionRows(BATCH_SETTINGS),
};

/** The files that hold generated tables, and the tables each holds in order (`npm run docs` writes them). */
export const TABLES_BY_FILE: Record<string, string[]> = {
  'docs/cli.md': ['remove-flags'],
  'docs/api.md': ['serve-flags'],
  'docs/library.md': ['call-options', 'batch-options', 'server-options'],
};

const BLOCK = /(<!-- settings: ([\w-]+) -->)[\s\S]*?(<!-- \/settings -->)/g;

/** `text` with every marked table made anew; an unknown name is an error. */
export function withCurrentTables(text: string): string {
  return text.replace(BLOCK, (_, open: string, name: string, close: string) => {
    const table = DOC_TABLES[name];
    if (!table) throw new Error(`unknown settings table '${name}'`);
    return `${open}\n${table()}\n${close}`;
  });
}

/** The names of the marked tables in `text`. */
export function tablesIn(text: string): string[] {
  return [...text.matchAll(BLOCK)].map((match) => match[2] as string);
}
