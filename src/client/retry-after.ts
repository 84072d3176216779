// Parses the Retry-After header (RFC 9110: delay-seconds or an HTTP-date) into seconds to wait.

/** Seconds to wait, or undefined when the header is absent or unreadable. A date in the past means 0. */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  // Only text that looks like an HTTP-date (it names a month): Date.parse('-3') would read a year.
  if (!/[a-z]{3}/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, (at - nowMs) / 1000);
}
