// Entry point: parses argv and turns every outcome into an exit code (commands return theirs;
// errors that escape them are mapped here).

import { CommanderError, type Command } from 'commander';
import { RmbgError } from '../api/errors.js';
import { EXIT } from './exit-codes.js';
import { buildProgram } from './program.js';
import { reportError } from './report-error.js';
import { inFlagWords } from './settings-flags.js';
import { REMOVE_TABLE, SERVE_TABLE } from '../settings/index.js';
import { stopWhenStdoutCloses } from './stdout-closed.js';

/** The tables whose settings the library's messages name, and the commands give as flags. */
const FLAG_TABLES = [SERVE_TABLE, REMOVE_TABLE];

export async function main(argv: string[]): Promise<void> {
  stopWhenStdoutCloses();
  const program = buildProgram();
  // Every level (keys create, credits add, …): a usage error must reach exitCodeFor, not commander's exit(1).
  const overrideExit = (command: Command): void => {
    command.exitOverride();
    command.commands.forEach(overrideExit);
  };
  overrideExit(program);
  try {
    await program.parseAsync(argv);
  } catch (error) {
    process.exitCode = exitCodeFor(error);
  }
  await endDespiteHungRuns();
}

/**
 * A model run set aside past its limit may never return (a hung GPU or kernel), and Node waits for every worker
 * thread before it exits, even in process.exit(): the CLI would hang. Said, the output flushed, then ended.
 */
async function endDespiteHungRuns(): Promise<void> {
  const { workersSetAsideRunning } = await import('../engine/runtime/inference-worker.js');
  const running = workersSetAsideRunning();
  if (running === 0) return;
  process.stderr.write(
    `rmbg: ${running} model run(s) past the run time limit are still running; ending the process (SIGKILL)\n`,
  );
  await new Promise((resolve) => process.stdout.write('', resolve));
  await new Promise((resolve) => process.stderr.write('', resolve));
  process.kill(process.pid, 'SIGKILL');
}

function exitCodeFor(error: unknown): number {
  if (error instanceof CommanderError) {
    // --help and --version arrive here as "errors" with exit code 0.
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof RmbgError) return reportError(error.with({ message: inFlagWords(error.message, FLAG_TABLES) }));
  process.stderr.write(`rmbg: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  return EXIT.failed;
}
