// Fields of an application/json body: one object, each key once. JSON.parse keeps the last of duplicate
// keys silently, so top-level keys are also counted on the text.

import { RmbgError } from './errors.js';
import { addField, emptyFields, type CollectedFields } from './request-fields.js';

export function collectJsonFields(body: Buffer): CollectedFields {
  const text = body.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const reason = text.trim() === '' ? 'the body is empty' : (error as Error).message;
    throw new RmbgError('invalid_request', `the body is not valid JSON (${reason}); send one JSON object`, {
      cause: error,
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new RmbgError(
      'invalid_request',
      `the JSON body must be an object of fields; got ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : typeof parsed}`,
    );
  }
  const fields = emptyFields();
  const object = parsed as Record<string, unknown>;
  for (const key of topLevelKeys(text)) addField(fields, key, object[key]);
  return fields;
}

/** Index of the quote that closes the string opened at `start`. */
function endOfString(text: string, start: number): number {
  let end = text.indexOf('"', start + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes += 1;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
}

/** Keys of the top-level object of already-validated JSON text, duplicates included, in order. */
function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      const end = endOfString(text, i);
      if (depth === 1 && expectKey) {
        keys.push(JSON.parse(text.slice(i, end + 1)) as string);
        expectKey = false;
      }
      i = end;
    } else if (c === '{' || c === '[') {
      depth += 1;
      if (depth === 1) expectKey = true;
    } else if (c === '}' || c === ']') {
      depth -= 1;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return keys;
}
