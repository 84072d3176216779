// `rmbg remove DIR | head`: the reader of stdout may leave before rmbg is done. Node then emits EPIPE on
// process.stdout, and an unhandled 'error' event crashes the process with a stack trace, mid-write.

import { EXIT } from './exit-codes.js';

/**
 * Turns a closed stdout into an orderly stop. A running batch listens for SIGINT: it is told as by a first
 * Ctrl-C, so the files in flight finish whole and nothing new starts (exit 130, as for Ctrl-C). With no
 * batch running there is nothing to finish: rmbg exits 1, quietly, as the output it was asked for was cut.
 * Any other stdout error stays fatal.
 */
export function stopWhenStdoutCloses(): void {
  let closed = false;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    if (closed) return;
    closed = true;
    if (process.listenerCount('SIGINT') > 0) process.emit('SIGINT', 'SIGINT');
    else process.exit(EXIT.failed);
  });
}
