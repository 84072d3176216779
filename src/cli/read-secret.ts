// Keys given as '-' are read from stdin, so they appear neither in `ps` nor in the shell's history
// (`--api-key -`, `credits add --key -`, `config set api-key` without a value).

import { RmbgError } from '../api/errors.js';

/** The first line of stdin, trimmed; usage_error when it is empty. */
export async function readSecretFromStdin(what: string): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write(`rmbg: type or paste the ${what}, then press Enter and Ctrl-D\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const secret = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0]?.trim() ?? '';
  if (secret === '') throw new RmbgError('usage_error', `no ${what} on stdin (one line was expected)`);
  return secret;
}

/** `value` itself, or the line on stdin when it is '-'. */
export async function secretOrStdin(value: string | undefined, what: string): Promise<string | undefined> {
  return value === '-' ? readSecretFromStdin(what) : value;
}
