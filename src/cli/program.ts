// The commander program: every command's flags and help, and a lazy import of the code that runs it.
// Nothing heavy (sharp, onnxruntime, fastify, SQLite) is imported here, so `rmbg --help` stays instant.

import { Command, InvalidArgumentError, Option } from 'commander';
import { CALLER_DEFAULT_OPTIONS, enumValues, OPTION_FIELDS } from '../api/options.js';
import { PHOTO_FORMATS_TEXT } from '../api/media-types.js';
import { PRESET_NAMES } from '../engine/model/model-contract.js';
import { rmbgVersion } from '../platform/package-info.js';
import { trustedProxies, trustProxyEntries } from '../server/trusted-proxies.js';
import { CREDITS_ADD_SETTINGS, KEYS_CREATE_SETTINGS, STORE_SETTINGS } from '../settings/admin.js';
import { BATCH_SETTINGS, CALL_SETTINGS, CALL_TABLE, SERVE_TABLE } from '../settings/index.js';
import { addSettingFlags } from './settings-flags.js';

const REMOVE_EXAMPLES = `
Examples:
  $ rmbg remove photo.jpg                            # no API URL configured: on this computer, ./rmbg-out/photo.png
  $ rmbg remove ./shoot --local -o ./cutouts --recursive
  $ rmbg remove ./incoming -o ./cutouts --watch       # photos copied in later are processed as they land
  $ rmbg remove ./shoot -o ./cutouts --api-url http://127.0.0.1:5000 --api-key $KEY
  $ cat in.jpg | rmbg remove - --local --format png > out.png
  $ rmbg remove ./shoot --local --json | jq -c 'select(.status=="failed")'
  $ rmbg remove ./shoot --local --device gpu          # on the GPU, or an error that says why (rmbg doctor)
  $ rmbg remove ./shoot -o ./cutouts --api-url https://api.example.com --dry-run

Exit codes: 0 every file done (or its output already there), 1 any file failed (now or in an earlier run),
2 usage error, 130 interrupted (run again to resume). --watch ends on Ctrl-C with the same codes: 130 only
when photos that had landed were left unprocessed.`;

const ROOT_EXAMPLES = `
Examples:
  $ rmbg remove ./photos --local -o ./cutouts        # offline, on this computer, no account
  $ rmbg serve --port 5000                           # the HTTP API on this machine
  $ rmbg keys create --credits 100                   # an API key for that server
  $ rmbg remove ./photos -o ./cutouts --api-url http://127.0.0.1:5000 --api-key KEY
  $ rmbg models list
  $ rmbg doctor                                      # versions, GPU, models, store: paste it into a bug report

Run 'rmbg <command> --help' for a command's options.`;

type Runner = (opts: Record<string, unknown>, args: string[], command: Command) => Promise<number>;

/** Wires a command to `./commands/<file>.js`, imported only when the command runs. */
function lazyAction(file: string) {
  return async function (this: Command, ...received: unknown[]) {
    const command = received[received.length - 1] as Command;
    const positional = received.slice(0, -2).flat() as string[];
    const module = (await import(`./commands/${file}.js`)) as { run: Runner };
    process.exitCode = await module.run(command.opts(), positional, command);
  };
}

/** `--trust-proxy 10.0.0.5,10.1.0.0/16`, repeatable: the entries so far, each checked as createServer() checks it. */
function parseTrustProxy(value: string, previous: unknown): string[] {
  const entries = [...((previous as string[] | undefined) ?? []), ...trustProxyEntries(value)];
  if (entries.length === 0) throw new InvalidArgumentError('give at least one IP address or CIDR block');
  return [...trustedProxies(entries).entries];
}

/** Flags for the image options, derived from the one schema in src/api/options.ts. */
function addImageOptions(command: Command): void {
  for (const field of OPTION_FIELDS) {
    const flag = field.name.replace(/_/g, '-');
    if (field.kind === 'boolean') {
      command.addOption(new Option(`--${flag}`, field.description));
    } else if (field.kind === 'color') {
      command.addOption(new Option(`--${flag} <color>`, field.description));
    } else if (field.name === 'size') {
      command.addOption(
        new Option(`--${flag} <${flag}>`, field.description).choices(field.values).default(CALLER_DEFAULT_OPTIONS.size),
      );
    } else if (field.name === 'format') {
      command.addOption(
        new Option(`--${flag} <${flag}>`, field.description).choices(enumValues(field, 'local')).default(field.default),
      );
    }
    // type, type_level and channels accept a single value with no effect: no flag for them.
  }
}

function addApiOptions(command: Command): Command {
  const { apiUrl, apiKey } = CALL_SETTINGS;
  return addSettingFlags(command, { apiUrl, apiKey });
}

/**
 * A command of the local service's store, run by ./commands/<file>.js: it takes --data-dir and --store (where
 * the store is) after the flags `configure` adds.
 */
function storeCommand(parent: Command, name: string, file: string, configure: (command: Command) => Command): void {
  addSettingFlags(configure(parent.command(name)), STORE_SETTINGS).action(lazyAction(file));
}

export function buildProgram(): Command {
  const program = new Command('rmbg')
    .description(
      'Remove image backgrounds: on this computer (the default, or --local), through any compatible API, or as a local API server.',
    )
    .version(rmbgVersion())
    .addHelpText('after', ROOT_EXAMPLES)
    .showHelpAfterError('(run with --help for usage)');

  addRemoveCommand(program);
  addServeCommand(program);
  addStoreCommands(program);
  addAccountCommand(program);
  addConfigCommand(program);
  addDoctorCommand(program);
  addModelsCommands(program);
  return program;
}

/** `rmbg remove`: its batch settings, the image options and the API call's. */
function addRemoveCommand(program: Command): void {
  const remove = program
    .command('remove')
    .description('remove the background of images (files, folders, or - for stdin to stdout)')
    .argument(
      '<inputs...>',
      `image files, folders, or - for stdin: ${PHOTO_FORMATS_TEXT} (the API takes JPG, PNG and WebP: with ` +
        `--api-url the others are converted on this computer before upload)`,
    );
  addSettingFlags(remove, BATCH_SETTINGS);
  addImageOptions(remove);
  addSettingFlags(remove, CALL_TABLE).addHelpText('after', REMOVE_EXAMPLES).action(lazyAction('remove'));
}

/** `rmbg serve`: the server's settings rows. */
function addServeCommand(program: Command): void {
  const serve = program.command('serve').description('run the background-removal API (api-spec 1.0) on this machine');
  addSettingFlags(serve, SERVE_TABLE, { trustProxy: parseTrustProxy })
    .addHelpText(
      'after',
      `
Examples:
  $ rmbg serve --port 5000 --data-dir ./rmbg-data
  $ rmbg serve --host 0.0.0.0 --store postgres://rmbg@db/rmbg     # one of several servers (docs/deploy.md)
  $ rmbg keys create --data-dir ./rmbg-data --credits 50
  $ curl -H "X-API-Key: $KEY" -F image_file=@photo.jpg http://127.0.0.1:5000/v1.0/removebg -o cutout.png`,
    )
    .action(lazyAction('serve'));
}

/** `rmbg keys create|list|revoke` and `rmbg credits add`: commands on the store. */
function addStoreCommands(program: Command): void {
  const keys = program.command('keys').description('manage API keys of the local service');
  storeCommand(keys, 'create', 'keys-create', (command) =>
    addSettingFlags(command.description('create an account and API key (printed once)'), KEYS_CREATE_SETTINGS),
  );
  storeCommand(keys, 'list', 'keys-list', (command) =>
    command.description('list API keys (ids, never the keys)').option('--json', 'JSON output'),
  );
  storeCommand(keys, 'revoke', 'keys-revoke', (command) =>
    command.description('revoke an API key').argument('<id>', 'key id from `rmbg keys list`'),
  );

  const credits = program.command('credits').description('manage credits of the local service');
  storeCommand(credits, 'add', 'credits-add', (command) =>
    addSettingFlags(
      command.description('add credits to the account of a key').argument('<n>', 'credits to add'),
      CREDITS_ADD_SETTINGS,
    ),
  );
}

/** `rmbg account`: the balance of an API account. */
function addAccountCommand(program: Command): void {
  const account = program
    .command('account')
    .description('show the credit balance of an API account (GET /v1.0/account)')
    .option('--json', 'JSON output');
  addApiOptions(account);
  account.action(lazyAction('account'));
}

/** `rmbg config`: the user settings file. */
function addConfigCommand(program: Command): void {
  program
    .command('config')
    .description('user settings: API URL, API key, device, default image options')
    .argument('<action>', 'set, get, unset or path')
    .argument('[name]', 'api-url, api-key, device, or an option: size, format, crop, bg_color')
    .argument('[value]', 'value for set')
    .addHelpText(
      'after',
      `
Examples:
  $ rmbg config set api-url https://api.example.com
  $ rmbg config set api-key < key.txt       # read from stdin (stored with mode 0600)
  $ rmbg config set api-key "$KEY"          # works too, but the key shows in \`ps\` and shell history
  $ rmbg config set size hd                 # default for rmbg remove; flags still win
  $ rmbg config set device cpu              # where rmbg remove --local and rmbg serve run the model
  $ rmbg config get
  $ rmbg config unset size`,
    )
    .action(lazyAction('config'));
}

/** `rmbg doctor`: what rmbg sees on this machine. */
function addDoctorCommand(program: Command): void {
  storeCommand(program, 'doctor', 'doctor', (command) =>
    command
      .description(
        'what rmbg sees on this machine, to paste into a bug report: versions, the GPU (and whether auto uses it), models, data directory, store',
      )
      .option('--json', 'JSON output')
      .addHelpText(
        'after',
        `
Exit code 1 when what the settings ask for cannot work here (device gpu without a working GPU, the model runs
would use, RMBG_MODEL or else the default, missing or corrupt); 0 otherwise.`,
      ),
  );
}

/** `rmbg models list|add|pull|remove`. */
function addModelsCommands(program: Command): void {
  const models = program.command('models').description('on-device models');
  storeCommand(models, 'list', 'models-list', (command) =>
    command
      .description('list models: name, size, verified, source, licence (and your own, added with models add)')
      .option('--json', 'JSON output'),
  );
  storeCommand(models, 'add', 'models-add', (command) =>
    command
      .description('register your own ONNX model (BiRefNet, BRIA RMBG, U²-Net, ISNet exports…) for --model NAME')
      .argument('<name>', 'name to use with --model')
      .argument('<file>', 'the .onnx file (copied into the data directory and verified by its sha256 before each use)')
      .addOption(new Option('--preset <family>', 'the contract of a model family').choices(PRESET_NAMES))
      .option('--input-size <N|WxH>', 'model input size in pixels (the photo is resized to it)')
      .option('--mean <r,g,b>', 'per-channel mean subtracted, on the --range scale')
      .option('--std <r,g,b>', 'per-channel std divided by, on the --range scale')
      .option('--range <range>', 'pixel scale before normalising: 0-1 or 0-255')
      .option('--activation <fn>', "'sigmoid' if the output is logits, 'none' if probabilities")
      .option('--input <name>', "input tensor name (default: the model's first input)")
      .option('--output <name>', "output tensor read as the mask (default: the model's first output)")
      .option('--json', 'JSON output')
      .addHelpText(
        'after',
        `
Presets (${PRESET_NAMES.join(', ')}): isnet and bria 1024² mean 0.5 std 1; birefnet 1024² ImageNet mean/std, logits;
u2net 320² ImageNet mean/std. Flags given with a preset override it.

Examples:
  $ rmbg models add birefnet-general ./BiRefNet-general.onnx --preset birefnet
  $ rmbg models add mine ./model.onnx --input-size 512 --mean 0.5 --std 0.5 --range 0-1 --activation sigmoid
  $ rmbg remove photo.jpg --local --model birefnet-general`,
      ),
  );
  storeCommand(models, 'pull', 'models-pull', (command) =>
    command
      .description("download a model of rmbg's catalogue (BiRefNet, U²-Net, ISNet, BRIA…) for --model NAME")
      .argument('<name>', 'catalogue name, as `rmbg models list` shows it')
      .option(
        '--from <url|dir>',
        "a mirror's base URL or a local folder holding the model's file, instead of its publisher",
      )
      .option('--accept-licence <licence>', 'accept the licence of non-commercial weights (e.g. CC-BY-NC-4.0)')
      .addHelpText(
        'after',
        `
The download resumes where it stopped when run again, and the file is installed only once it matches the hash its
publisher pins. HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply. Catalogue and sources: docs/models.md.

Examples:
  $ rmbg models pull birefnet-general-lite
  $ rmbg models pull birefnet-general --from https://mirror.example.com/rmbg-models
  $ rmbg models pull u2net --from /mnt/usb/models
  $ rmbg models pull bria-rmbg --accept-licence CC-BY-NC-4.0`,
      ),
  );
  storeCommand(models, 'remove', 'models-remove', (command) =>
    command
      .description('forget a model added with models add or pulled with models pull, and delete its file')
      .argument('<name>', 'model name'),
  );
}
