// glibc's malloc raises its mmap threshold to the size of each large block it frees (up to 32 MiB); past that,
// image-sized buffers come from per-thread arenas, whose free memory glibc keeps, so a long run's RSS climbs to
// each thread's worst case and stays there (bench/RESULTS.md, "Issue #40"). Fixed thresholds turn that off: a large
// buffer gets a mapping of its own, returned when it is freed. glibc reads them once, at start, from the environment.

/** glibc's own initial thresholds, fixed (setting either stops glibc from raising them). */
const MALLOC_TUNABLES = 'glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072';

/** Set in the environment of the process rmbg starts with the thresholds, so that it starts no other: glibc drops
 * GLIBC_TUNABLES for a privileged process (setcap, setuid), so its absence there would restart it for ever. */
const RESTARTED = 'RMBG_MALLOC_RESTARTED';

/** The signals a parent on Node 20 passes to the `rmbg serve` it runs (what a terminal, a supervisor or kill send;
 * not SIGUSR1, Node's own for its inspector). */
const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'];

/** Whether the environment fixes glibc's thresholds (ours after the restart, or the user's, which win): either
 * tunable, or its older variable. */
function mallocThresholdsFixed(env) {
  const tunables = (env.GLIBC_TUNABLES ?? '').split(':');
  return (
    tunables.some((tunable) => /^glibc\.malloc\.(mmap|trim)_threshold=/.test(tunable)) ||
    env.MALLOC_MMAP_THRESHOLD_ !== undefined ||
    env.MALLOC_TRIM_THRESHOLD_ !== undefined
  );
}

/** glibc's version where Node runs on it (by Node's report); undefined elsewhere (musl, macOS, Windows). */
function glibcVersion() {
  if (process.platform !== 'linux') return undefined;
  return process.report.getReport().header.glibcVersionRuntime;
}

/** How the command restarts with the thresholds fixed on this Node: 'execve' (22.15, 23.11 and later: the same
 * process), 'child' (older: `rmbg serve` alone, in a child process), or undefined where it does not. */
function restartKind(env, argv) {
  if (env[RESTARTED] !== undefined || mallocThresholdsFixed(env) || glibcVersion() === undefined) return undefined;
  if (typeof process.execve === 'function') return 'execve';
  return argv[2] === 'serve' ? 'child' : undefined;
}

/**
 * Runs the command (`run`) with glibc's thresholds fixed where its malloc has them dynamic: on Node 22.15, 23.11 and
 * later this process starts again as itself (the same pid, arguments and streams); on older Nodes `rmbg serve` runs
 * in one child process, which this one passes signals to and whose exit it ends with. Other commands, and any
 * restart that fails, run `run` here as they are.
 */
function runWithFixedMallocThresholds(run) {
  const kind = restartKind(process.env, process.argv);
  if (kind === undefined) return run();
  const args = [...process.execArgv, ...process.argv.slice(1)];
  const env = {
    ...process.env,
    GLIBC_TUNABLES: [process.env.GLIBC_TUNABLES, MALLOC_TUNABLES].filter(Boolean).join(':'),
  };
  env[RESTARTED] = '1';
  if (kind === 'child') return runInChild(args, env, run);
  try {
    // Node aborts the process where execve(2) itself fails: what can fail is checked first (a Node binary replaced
    // or removed by an upgrade since it started); Node's own checks throw.
    require('node:fs').accessSync(process.execPath, require('node:fs').constants.X_OK);
    process.execve(process.execPath, [process.execPath, ...args], env);
  } catch (error) {
    goingOnWithout(error);
    run();
  }
}

/** Says that the thresholds stay dynamic, and why, on standard error (standard output may be the command's data). */
function goingOnWithout(error) {
  process.stderr.write(
    `rmbg: could not restart with fixed malloc thresholds (${error.code ?? error.message}); going on without\n`,
  );
}

/**
 * `rmbg serve` in a child process with `env`: the signals of FORWARDED_SIGNALS passed on, and this process ending as
 * the child did (its exit code, or its signal). The child runs in a session of its own so that a terminal's Ctrl-C
 * reaches it once (through this process), not twice (a second one means "now"). Where it cannot start, `run` here.
 */
function runInChild(args, env, run) {
  const { spawn } = require('node:child_process');
  // The IPC channel closes when this process dies however it dies (SIGKILL included): the child then dies too.
  const child = spawn(process.execPath, args, { env, stdio: ['inherit', 'inherit', 'inherit', 'ipc'], detached: true });
  const pass = (signal) => child.kill(signal);
  for (const signal of FORWARDED_SIGNALS) process.on(signal, pass);
  const stopPassing = () => {
    for (const signal of FORWARDED_SIGNALS) process.off(signal, pass);
  };
  child.once('error', (error) => {
    stopPassing();
    goingOnWithout(error);
    run();
  });
  child.once('exit', (code, signal) => {
    stopPassing();
    if (signal === null) process.exit(code);
    process.kill(process.pid, signal);
    // Where that signal does not end a process by default, the shell's convention for a death by it.
    setTimeout(() => process.exit(128 + require('node:os').constants.signals[signal]), 1000);
  });
}

/** In the child of runInChild: dies with its parent (the IPC channel closes), and the channel keeps nothing alive. */
function dieWithParent() {
  if (process.env[RESTARTED] === undefined || !process.channel) return;
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGKILL'));
}

module.exports = {
  MALLOC_TUNABLES,
  RESTARTED,
  mallocThresholdsFixed,
  glibcVersion,
  runWithFixedMallocThresholds,
  dieWithParent,
};
