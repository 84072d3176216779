// How a client's value is quoted in an error message: bounded, flat and printable. JSON.stringify of a
// client's value would recurse through any nesting depth (a stack overflow, a 500 for 20,000 levels of
// {"a":...}) and could echo megabytes or control characters back.

/** Characters of a string value quoted before it is cut with an ellipsis. */
const MAX_QUOTED = 60;

function quote(text: string): string {
  const cut = text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text;
  // JSON string escaping shows control characters visibly; the value is flat, so this cannot recurse.
  return `'${JSON.stringify(cut).slice(1, -1)}'`;
}

export function describeValue(value: unknown): string {
  if (typeof value === 'string') return quote(value);
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return quote(String(value)).slice(1, -1);
  if (typeof value === 'bigint') return `${value}`.slice(0, MAX_QUOTED);
  if (Array.isArray(value)) return `an array of ${value.length} item${value.length === 1 ? '' : 's'}`;
  if (typeof value === 'object') return 'an object';
  return typeof value;
}
