// The commander program: every command's flags and help, and a lazy import of the code that runs it.
// Nothing heavy (sharp, onnxruntime, fastify, SQLite) is imported here, so `rmbg --help` stays instant.

import { Command, InvalidArgumentError, Option } from 'commander';
import { CALLER_DEFAULT_OPTIONS, OPTION_FIELDS, LIMITS } from '../api/options.js';
import { checkWholeNumber } from '../api/whole-number.js';
import { MAX_CONCURRENCY } from '../batch/remover.js';
import { DEVICE_DESCRIPTION, DEVICES } from '../api/device.js';
import { PRESET_NAMES } from '../engine/model-contract.js';
import { flagOf, METRICS_TOKEN_ENV, SERVER_BOUNDS, SERVER_DEFAULTS } from '../library/server-options.js';
import { trustedProxies, trustProxyEntries } from '../server/trusted-proxies.js';

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

function parseInteger(name: string, min: number, max?: number) {
  return (value: string) => {
    try {
      return checkWholeNumber(name, value, min, max);
    } catch (error) {
      // InvalidArgumentError: commander reports it as a usage error (exit 2), not a crash with a stack trace.
      throw new InvalidArgumentError((error as Error).message);
    }
  };
}

/** A whole-number option of `rmbg serve`, with the bounds createServer() checks too. */
function serverInteger(name: keyof typeof SERVER_BOUNDS) {
  const [min, max] = SERVER_BOUNDS[name];
  return parseInteger(flagOf(name), min, max);
}

/** `--trust-proxy 10.0.0.5,10.1.0.0/16`, repeatable: the entries so far, each checked as createServer() checks it. */
function parseTrustProxy(value: string, previous: string[] | undefined): string[] {
  const entries = [...(previous ?? []), ...trustProxyEntries(value)];
  if (entries.length === 0) throw new InvalidArgumentError('give at least one IP address or CIDR block');
  try {
    return [...trustedProxies(entries).entries];
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
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
        new Option(`--${flag} <${flag}>`, field.description).choices(field.values).default(field.default),
      );
    }
    // type, type_level and channels accept a single value with no effect: no flag for them.
  }
}

/** --device: no default here, so RMBG_DEVICE and `rmbg config set device` apply when it is not typed. */
function deviceOption(): Option {
  return new Option('--device <device>', `${DEVICE_DESCRIPTION} (env RMBG_DEVICE; default auto)`).choices(DEVICES);
}

function addApiOptions(command: Command): void {
  command
    .option('--api-url <url>', 'API base URL (env RMBG_API_URL; the /v1.0 prefix is added)')
    .option(
      '--api-key <key>',
      "API key, or - to read it from stdin; prefer env RMBG_API_KEY or '-': a key on the command line shows in `ps` and shell history",
    );
}

/** Where the local service's store is: every command that opens it takes both flags. */
function addDataDirOption(command: Command): Command {
  return command
    .option(
      '--data-dir <dir>',
      'data directory of the local service (env RMBG_DATA_DIR; default: the platform user data dir)',
    )
    .option(
      '--store <url>',
      "the store: postgres://… (shared by several servers), or a SQLite file path / sqlite:path (env RMBG_STORE_URL; default: the data directory's file)",
    );
}

export function buildProgram(): Command {
  const program = new Command('rmbg')
    .description(
      'Remove image backgrounds: on this computer (the default, or --local), through any compatible API, or as a local API server.',
    )
    .version('0.1.0')
    .addHelpText('after', ROOT_EXAMPLES)
    .showHelpAfterError('(run with --help for usage)');

  const remove = program
    .command('remove')
    .description('remove the background of images (files, folders, or - for stdin to stdout)')
    .argument('<inputs...>', 'image files, folders, or - for stdin')
    .option('-o, --output <dir>', 'output folder (subfolders of an input folder are kept)', 'rmbg-out')
    .option(
      '--local',
      'run on this computer (on-device model, no account, no network) even when an API URL is configured; the default when none is',
    )
    .option('-r, --recursive', 'descend into subfolders of input folders')
    .option(
      '-w, --watch',
      'keep running: process photos as they land in the input folders (once a file stops growing); Ctrl-C stops after the photos in flight',
    )
    .option('--overwrite', 'replace existing outputs (default: skip them)');
  addImageOptions(remove);
  addApiOptions(remove);
  remove
    .option('--model <name|path>', 'model name from `rmbg models list`, or a path to an .onnx file (with --local)')
    .addOption(deviceOption())
    .option(
      '--keep-metadata',
      "keep the photo's EXIF artist, copyright and dates in the result (never its GPS position)",
    )
    .option('--keep-gps', "also keep the photo's GPS position (implies --keep-metadata)")
    .addOption(
      new Option(
        '--concurrency <n>',
        'images in flight at once (default: remote 4; local 2 on the CPU, half the cores (2 to 8) on the GPU)',
      ).argParser(parseInteger('--concurrency', 1, MAX_CONCURRENCY)),
    )
    .option('--json', 'one JSON object per file and a summary line, instead of a progress bar')
    .option('--retry-failed', 'retry files the journal records as failed')
    .option('--dry-run', 'list what would be sent and the credits it would cost; send nothing')
    .addOption(
      new Option(
        '--confirm-over <credits>',
        'ask before spending more than this many credits (refuse without a TTY)',
      ).argParser(parseInteger('--confirm-over', 0)),
    )
    .addOption(
      new Option('--timeout <seconds>', 'per-request timeout for remote calls')
        .default(LIMITS.clientTimeoutMs / 1000)
        .argParser(parseInteger('--timeout', 1)),
    )
    .addHelpText('after', REMOVE_EXAMPLES)
    .action(lazyAction('remove'));

  const serve = program
    .command('serve')
    .description('run the background-removal API (api-spec 1.0) on this machine')
    .option('--host <host>', 'address to listen on', SERVER_DEFAULTS.host)
    .addOption(
      new Option('--port <port>', 'port to listen on (0: any free port)')
        .default(SERVER_DEFAULTS.port)
        .argParser(serverInteger('port')),
    );
  addDataDirOption(serve);
  serve
    .addOption(
      new Option('--credits-per-image <n>', 'credits charged per processed image, any size')
        .default(SERVER_DEFAULTS.creditsPerImage)
        .argParser(serverInteger('creditsPerImage')),
    )
    .addOption(
      new Option('--rate-limit <n>', 'requests per minute per API key')
        .default(SERVER_DEFAULTS.rateLimit)
        .argParser(serverInteger('rateLimit')),
    )
    .addOption(
      new Option('--max-queue <n>', 'requests waiting for the model before 503')
        .default(SERVER_DEFAULTS.maxQueue)
        .argParser(serverInteger('maxQueue')),
    )
    .addOption(
      new Option('--processing-timeout <seconds>', 'processing time limit before 504 and refund')
        .default(SERVER_DEFAULTS.processingTimeout)
        .argParser(serverInteger('processingTimeout')),
    )
    .addOption(
      new Option('--body-timeout <seconds>', 'time to receive a request body before 408')
        .default(SERVER_DEFAULTS.bodyTimeout)
        .argParser(serverInteger('bodyTimeout')),
    )
    .addOption(
      new Option(
        '--lease-time <seconds>',
        'lease of a request in progress; another server refunds it once its lease expires',
      )
        .default(SERVER_DEFAULTS.leaseTime)
        .argParser(serverInteger('leaseTime')),
    )
    .option(
      '--metrics-token <token>',
      `let GET /metrics be read from any address with "Authorization: Bearer <token>" (env ${METRICS_TOKEN_ENV}; default: loopback only); a token here shows in \`ps\`: prefer the env or ${flagOf('metricsTokenFile')}`,
    )
    .option(`${flagOf('metricsTokenFile')} <path>`, 'read the metrics token from this file instead')
    .addOption(
      new Option(
        `${flagOf('trustProxy')} <addresses>`,
        'proxies (IP addresses or CIDR blocks, comma-separated; repeatable) whose X-Forwarded-For names the client (default: none)',
      ).argParser(parseTrustProxy),
    )
    .addOption(
      new Option('--headers-timeout <seconds>', 'time to receive request headers before the connection is closed')
        .default(SERVER_DEFAULTS.headersTimeout)
        .argParser(serverInteger('headersTimeout')),
    )
    .addOption(
      new Option('--max-connections <n>', 'open connections at once; more are closed on arrival')
        .default(SERVER_DEFAULTS.maxConnections)
        .argParser(serverInteger('maxConnections')),
    )
    .addOption(
      new Option('--max-uploads <n>', 'request bodies received at once before 503')
        .default(SERVER_DEFAULTS.maxUploads)
        .argParser(serverInteger('maxUploads')),
    )
    .addOption(
      new Option('--max-url-fetches <n>', 'image_url downloads at once before 503')
        .default(SERVER_DEFAULTS.maxUrlFetches)
        .argParser(serverInteger('maxUrlFetches')),
    )
    .addOption(
      new Option('--max-in-flight-per-key <n>', 'requests of one API key in progress at once before 429')
        .default(SERVER_DEFAULTS.maxInFlightPerKey)
        .argParser(serverInteger('maxInFlightPerKey')),
    )
    .addOption(
      new Option('--max-auth-failures <n>', 'failed authentications per client address and minute before 429')
        .default(SERVER_DEFAULTS.maxAuthFailures)
        .argParser(serverInteger('maxAuthFailures')),
    )
    .option('--model <name|path>', 'model name or .onnx path')
    .addOption(deviceOption())
    .option('--no-ui', 'do not serve the web page at / (the API only)')
    .option('--allow-private-urls', 'FOR LOCAL TESTING ONLY: let image_url reach private and loopback addresses')
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

  const keys = program.command('keys').description('manage API keys of the local service');
  addDataDirOption(
    keys
      .command('create')
      .description('create an account and API key (printed once)')
      .addOption(
        new Option('--credits <n>', 'pay-as-you-go credits to grant')
          .default(0)
          .argParser(parseInteger('--credits', 0)),
      )
      .addOption(
        new Option('--plan <plan>', 'plan of the account').choices(['pro', 'enterprise', 'free']).default('pro'),
      )
      .option('--json', 'print {"key","account","plan","credits"}'),
  ).action(lazyAction('keys-create'));
  addDataDirOption(
    keys.command('list').description('list API keys (ids, never the keys)').option('--json', 'JSON output'),
  ).action(lazyAction('keys-list'));
  addDataDirOption(
    keys.command('revoke').description('revoke an API key').argument('<id>', 'key id from `rmbg keys list`'),
  ).action(lazyAction('keys-revoke'));

  addDataDirOption(
    program
      .command('credits')
      .description('manage credits of the local service')
      .command('add')
      .description('add credits to the account of a key')
      .argument('<n>', 'credits to add')
      .option('--key-id <id>', 'id of a key of the account (from `rmbg keys list`)')
      .option(
        '--key <key>',
        'API key of the account, or - to read it from stdin (env RMBG_API_KEY); a key on the command line shows in `ps` and shell history',
      )
      .option('--subscription', 'add subscription credits instead of pay-as-you-go'),
  ).action(lazyAction('credits-add'));

  const account = program
    .command('account')
    .description('show the credit balance of an API account (GET /v1.0/account)')
    .option('--json', 'JSON output');
  addApiOptions(account);
  account.action(lazyAction('account'));

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

  addDataDirOption(
    program
      .command('doctor')
      .description(
        'what rmbg sees on this machine, to paste into a bug report: versions, the GPU (and whether auto uses it), models, data directory, store',
      )
      .option('--json', 'JSON output')
      .addHelpText(
        'after',
        `
Exit code 1 when what the settings ask for cannot work here (device gpu without a working GPU, the default
model missing or corrupt); 0 otherwise.`,
      ),
  ).action(lazyAction('doctor'));

  const models = program.command('models').description('on-device models');
  addDataDirOption(
    models
      .command('list')
      .description('list models: name, size, verified, source, licence (and your own, added with models add)')
      .option('--json', 'JSON output'),
  ).action(lazyAction('models-list'));
  addDataDirOption(
    models
      .command('add')
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
  ).action(lazyAction('models-add'));
  addDataDirOption(
    models
      .command('remove')
      .description('forget a model added with models add and delete its copy')
      .argument('<name>', 'model name'),
  ).action(lazyAction('models-remove'));

  return program;
}
