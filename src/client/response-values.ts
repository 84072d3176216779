// Reads the values a successful response carries in headers and body: result size, credits, request id,
// foreground box, confidence, rate limit, replay flag, and the account record, rejecting answers that lack them.

import { RmbgError } from '../api/errors.js';
import { HEADERS } from '../api/response-headers.js';
import type { AccountRecord, ForegroundBox, RateLimitInfo } from '../api/wire-types.js';

export type ResponseHeaders = Record<string, string>;

function integerHeader(headers: ResponseHeaders, name: string): number | undefined {
  const raw = headerText(headers, name);
  if (raw === undefined || !/^\s*-?\d+\s*$/.test(raw)) return undefined;
  return Number(raw);
}

function headerText(headers: ResponseHeaders, name: string): string | undefined {
  return headers[name.toLowerCase()];
}

/** A header the spec requires on every success: its absence means the server is not speaking the API. */
export function requiredIntegerHeader(headers: ResponseHeaders, name: string): number {
  const value = integerHeader(headers, name);
  if (value === undefined) {
    const got = headerText(headers, name);
    throw new RmbgError(
      'upstream_error',
      `API server's answer lacks a whole-number ${name} header${got === undefined ? '' : `; got '${got}'`}`,
      { status: 200 },
    );
  }
  return value;
}

export function foregroundFrom(headers: ResponseHeaders): ForegroundBox | undefined {
  const top = integerHeader(headers, HEADERS.foregroundTop);
  const left = integerHeader(headers, HEADERS.foregroundLeft);
  const width = integerHeader(headers, HEADERS.foregroundWidth);
  const height = integerHeader(headers, HEADERS.foregroundHeight);
  if (top === undefined || left === undefined || width === undefined || height === undefined) return undefined;
  return { top, left, width, height };
}

/** rmbg's X-Confidence extension: undefined when absent or not a number from 0 to 1 (a peer server, an old replay). */
export function confidenceFrom(headers: ResponseHeaders): number | undefined {
  const raw = headerText(headers, HEADERS.confidence)?.trim();
  if (!raw || !/^\d+(\.\d+)?$/.test(raw)) return undefined;
  const value = Number(raw);
  return value <= 1 ? value : undefined;
}

export function rateLimitFrom(headers: ResponseHeaders): RateLimitInfo | undefined {
  const limit = integerHeader(headers, HEADERS.rateLimitLimit);
  const remaining = integerHeader(headers, HEADERS.rateLimitRemaining);
  const resetSeconds = integerHeader(headers, HEADERS.rateLimitReset);
  if (limit === undefined || remaining === undefined || resetSeconds === undefined) return undefined;
  return { limit, remaining, resetSeconds };
}

export function isReplay(headers: ResponseHeaders): boolean {
  return headerText(headers, HEADERS.replayed)?.trim().toLowerCase() === 'true';
}

export function requestIdOf(headers: ResponseHeaders): string {
  return headerText(headers, HEADERS.requestId) ?? '';
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** Checks the shape of GET /v1.0/account's answer; a different shape is the server's fault, not ours. */
export function accountRecordFrom(body: string): AccountRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new RmbgError('upstream_error', `API server's account answer is not JSON: ${body.slice(0, 120)}`, {
      status: 200,
    });
  }
  const credits = (parsed as { data?: { attributes?: { credits?: Record<string, unknown> } } } | null)?.data?.attributes
    ?.credits;
  if (!credits || !isCount(credits.total) || !isCount(credits.subscription) || !isCount(credits.payg)) {
    throw new RmbgError(
      'upstream_error',
      "API server's account answer lacks data.attributes.credits.total, .subscription and .payg as numbers",
      { status: 200 },
    );
  }
  return parsed as AccountRecord;
}
