// Fields of an application/x-www-form-urlencoded body, each name once.

import { addField, emptyFields, type CollectedFields } from './request-fields.js';

export function collectUrlencodedFields(body: Buffer): CollectedFields {
  const fields = emptyFields();
  for (const [name, value] of new URLSearchParams(body.toString('utf8'))) addField(fields, name, value);
  return fields;
}
