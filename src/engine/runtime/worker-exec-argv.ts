// The inference worker's Node flags: a worker inheriting `--input-type` (node -e) exits, so it gets only the flags
// a worker accepts (Worker refuses per-process options and V8 flags).

// Node 20's options a Worker accepts (worker-exec-argv.test.ts tries each, on every Node line CI runs), less --eval,
// --print, --input-type.
// `=` marks those taking a value.
const WORKER_OPTIONS = `--addons --allow-addons --allow-child-process --allow-fs-read= --allow-fs-write= --allow-wasi
  --allow-worker --build-snapshot --build-snapshot-config= --check --conditions= --cpu-prof --cpu-prof-dir=
  --cpu-prof-interval= --cpu-prof-name= --deprecation --diagnostic-dir= --disable-warning= --dns-result-order=
  --enable-source-maps --env-file-if-exists= --env-file= --experimental-abortcontroller --experimental-default-type=
  --experimental-detect-module --experimental-eventsource --experimental-fetch --experimental-global-customevent
  --experimental-global-webcrypto --experimental-import-meta-resolve --experimental-json-modules --experimental-loader=
  --experimental-modules --experimental-network-imports --experimental-network-inspection --experimental-permission
  --experimental-policy= --experimental-print-required-tla --experimental-repl-await --experimental-report
  --experimental-require-module --experimental-specifier-resolution --experimental-test-coverage
  --experimental-test-module-mocks --experimental-top-level-await --experimental-vm-modules
  --experimental-wasi-unstable-preview1 --experimental-wasm-modules --experimental-websocket --experimental-worker
  --expose-internals --extra-info-on-fatal-exception --force-async-hooks-checks --force-context-aware
  --force-node-api-uncaught-exceptions-policy --frozen-intrinsics --global-search-paths --heap-prof --heap-prof-dir=
  --heap-prof-interval= --heap-prof-name= --heapsnapshot-near-heap-limit= --heapsnapshot-signal= --http-parser
  --import= --insecure-http-parser --inspect --inspect-brk --inspect-brk-node --inspect-port= --inspect-publish-uid=
  --inspect-wait --interactive --max-http-header-size= --napi-modules --network-family-autoselection
  --network-family-autoselection-attempt-timeout= --pending-deprecation --policy-integrity= --preserve-symlinks
  --preserve-symlinks-main --prof-process --redirect-warnings= --report-exclude-network --report-on-signal
  --report-signal= --report-uncaught-exception --require= --test --test-concurrency= --test-force-exit
  --test-name-pattern= --test-only --test-reporter-destination= --test-reporter= --test-shard= --test-timeout=
  --test-udp-no-try-send --throw-deprecation --tls-keylog= --tls-max-v1.2 --tls-max-v1.3 --tls-min-v1.0 --tls-min-v1.1
  --tls-min-v1.2 --tls-min-v1.3 --trace-atomics-wait --trace-deprecation --trace-exit --trace-promises
  --trace-require-module= --trace-sync-io --trace-tls --trace-uncaught --trace-warnings --track-heap-objects
  --unhandled-rejections= --verify-base-objects --warnings --watch-preserve-output`.split(/\s+/);

// Options of Node 22, 24 and 26 a Worker accepts (each absent from Node 20, so harmless there).
const LATER_WORKER_OPTIONS = `--allow-ffi --allow-fs-vfs --allow-inspector --allow-net --allow-openssl-store
  --async-context-frame --config-file= --disable-sigusr1 --entry-url --experimental-addon-modules
  --experimental-async-context-frame --experimental-bench --experimental-config-file= --experimental-default-config-file
  --experimental-dtls --experimental-ffi --experimental-global-navigator --experimental-import-text
  --experimental-inspector-network-resource --experimental-package-map= --experimental-quic --experimental-sqlite
  --experimental-storage-inspection --experimental-stream-iter --experimental-strip-types --experimental-test-isolation=
  --experimental-test-snapshots --experimental-test-tag-filter= --experimental-transform-types --experimental-vfs
  --experimental-web-worker --experimental-webstorage --experimental-worker-inspection --localstorage-file= --permission
  --permission-audit --report-exclude-env --require-module --strip-types --test-coverage-branches=
  --test-coverage-exclude= --test-coverage-functions= --test-coverage-include-all --test-coverage-include=
  --test-coverage-lines= --test-global-setup= --test-isolation= --test-random-seed= --test-randomize
  --test-rerun-failures= --test-skip-pattern= --test-update-snapshots --trace-env --trace-env-js-stack
  --trace-env-native-stack --use-env-proxy --vfs-load= --watch-kill-signal= --worker-snapshot`.split(/\s+/);

// Options Node 20 and 22 refuse in a Worker and Node 24 and later accept.
const WORKER_OPTIONS_FROM_24 = ['--use-system-ca', '--watch', '--watch-path='];
const nodeMajor = Number(process.versions.node.split('.')[0]);

// The options left out above that take a value: the value goes with them when it is the next argument.
const REFUSED_WITH_VALUE =
  `--disable-proto --eval --experimental-sea-config --icu-data-dir --input-type --openssl-config
  --print --report-dir --report-filename --secure-heap --secure-heap-min --security-revert --snapshot-blob --title
  --tls-cipher-list --trace-event-categories --trace-event-file-pattern --use-largepages --v8-pool-size --watch-path`.split(
    /\s+/,
  );

/** Node 20's short and old spellings, by the option they stand for. */
const ALIASES: Record<string, string> = {
  '-C': '--conditions',
  '-c': '--check',
  '-e': '--eval',
  '-h': '--help',
  '-i': '--interactive',
  '-p': '--print',
  '-pe': '--print',
  '-r': '--require',
  '-v': '--version',
  '--debug-port': '--inspect-port',
  '--enable-network-family-autoselection': '--network-family-autoselection',
  '--es-module-specifier-resolution': '--experimental-specifier-resolution',
  '--loader': '--experimental-loader',
  '--report-directory': '--report-dir',
  '--security-reverts': '--security-revert',
};

const WORKER_TAKES = [...WORKER_OPTIONS, ...LATER_WORKER_OPTIONS, ...(nodeMajor >= 24 ? WORKER_OPTIONS_FROM_24 : [])];
const TAKEN = new Set(WORKER_TAKES.map((option) => option.replace(/=$/, '')));
const WITH_VALUE = new Set([
  ...WORKER_TAKES.filter((option) => option.endsWith('=')).map((option) => option.slice(0, -1)),
  ...REFUSED_WITH_VALUE,
]);

interface Flag {
  /** The option, as Node names it (aliases resolved, `_` read as `-`, `--no-` dropped). */
  name: string;
  /** The flag as given, with its value when that is the next argument. */
  args: string[];
}

function parse(execArgv: readonly string[]): Flag[] {
  const flags: Flag[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i] as string;
    const equals = arg.indexOf('=');
    const spelled = equals === -1 ? arg : arg.slice(0, equals);
    // Node reads `_` as `-` in option names (--input_type is --input-type).
    let name = spelled.startsWith('--') ? `--${spelled.slice(2).replaceAll('_', '-')}` : spelled;
    name = ALIASES[name] ?? name;
    if (name.startsWith('--no-') && TAKEN.has(`--${name.slice(5)}`)) name = `--${name.slice(5)}`;
    const args = [arg];
    if (equals === -1 && WITH_VALUE.has(name) && i + 1 < execArgv.length) args.push(execArgv[++i] as string);
    flags.push({ name, args });
  }
  return flags;
}

/** The worker's execArgv: undefined (inherit) unless `execArgv` has --input-type; then only flags a worker takes. */
export function workerExecArgv(execArgv: readonly string[]): string[] | undefined {
  const flags = parse(execArgv);
  if (!flags.some((flag) => flag.name === '--input-type')) return undefined;
  return flags.filter((flag) => TAKEN.has(flag.name)).flatMap((flag) => flag.args);
}
