// The HTTP adapter on a real port of 127.0.0.1, over the real service and a real SQLite store, with the sharp
// stand-in engine (test/helpers/sharp-test-engine.ts): shared by the HTTP contract's files (test/unit/server/http-*,
// removebg-*, account-and-openapi, and test/integration/server/removebg-formats-and-sizes). Each test gets a fresh
// store and starts its own server (start()); the state below is read by the tests through live bindings.

import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/start-server.js';
import { createService, type Service, type ServiceDeps } from '../../src/service/index.js';
import { openStore, type Store } from '../../src/store/index.js';
import {
  testEngine,
  testImage,
  type Behaviour,
  type TestEngine,
  TEST_APP_LIMITS,
  TEST_SERVICE_LIMITS,
} from './sharp-test-engine.js';

export let dir: string;
export let store: Store;
export let engine: TestEngine;
export let service: Service;
export let server: RunningServer;
export let key: string;
export let image: Buffer;

/** Lines the server logged (level warn and up), when a test asked start() for them. */
export let logged: string[] = [];

export async function start(
  options: Partial<ServiceDeps> & { behaviour?: Behaviour; bodyTimeoutMs?: number; log?: boolean } = {},
): Promise<void> {
  engine = testEngine(options.behaviour);
  service = await createService({
    store,
    engine,
    ...TEST_SERVICE_LIMITS,
    ...options,
  });
  logged = [];
  const logger = options.log
    ? { level: 'warn', stream: { write: (line: string) => void logged.push(line) } }
    : undefined;
  server = await startServer({
    host: '127.0.0.1',
    port: 0,
    service,
    ...TEST_APP_LIMITS,
    bodyTimeoutMs: options.bodyTimeoutMs ?? TEST_APP_LIMITS.bodyTimeoutMs,
    ...(logger ? { logger } : {}),
  });
}

/** Registers the hooks that give each test of the calling file a fresh store, account (10 credits) and image;
 * the test (or its describe) starts the server with start(). */
export function useContractServer(): void {
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rmbg-server-'));
    store = await openStore(dir);
    key = (await store.createAccountWithKey({ plan: 'pro', credits: 10 })).key;
    image = await testImage(64, 48);
  });

  afterEach(async () => {
    await server?.close();
    await service?.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
}

export function form(fields: Record<string, string> = {}, file: Buffer | null = image): FormData {
  const body = new FormData();
  if (file) body.append('image_file', new Blob([new Uint8Array(file)], { type: 'image/jpeg' }), 'photo.jpg');
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  return body;
}

export async function post(body: NonNullable<RequestInit['body']>, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}/v1.0/removebg`, {
    method: 'POST',
    body,
    headers: { 'X-API-Key': key, ...headers },
  });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

export function errorOf(body: Buffer): { title: string; code: string; detail: string } {
  const parsed = JSON.parse(body.toString()) as { errors: Array<{ title: string; code: string; detail: string }> };
  expect(parsed.errors).toHaveLength(1);
  return parsed.errors[0]!;
}

export async function balance(): Promise<number> {
  const response = await fetch(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
  const account = (await response.json()) as { data: { attributes: { credits: { total: number } } } };
  return account.data.attributes.credits.total;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
}

/** Any request to the server, without a key unless the caller sends one. */
export async function call(path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(`${server.url}${path}`, init);
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

export function statusLines(raw: string): string[] {
  return raw.match(/HTTP\/1\.1 \d{3}/g) ?? [];
}

/** Sends raw bytes on a new connection and collects everything the server answers until it closes. */
export function rawExchange(payload: string, keepOpenMs = 0): Promise<string> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(url.port), url.hostname, () => socket.write(payload));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    if (keepOpenMs > 0) setTimeout(() => socket.destroy(), keepOpenMs);
  });
}
