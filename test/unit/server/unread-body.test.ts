// An error answered after the whole body was read leaves nothing behind to cut the connection later: through
// fastify's inject() (whose stand-in socket has no destroy()) such a timer threw in whatever ran 10 s later.

import type { FastifyInstance } from 'fastify';
import { afterEach, expect, it, vi } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { buildApp } from '../../../src/server/build-app.js';
import type { DeferredRemoveRequest, RemoveRequest } from '../../../src/service/types.js';

/** Reads the whole request, then fails the way a run past its time limit does. */
const service = {
  handleRemoveRequest: async (request: RemoveRequest | DeferredRemoveRequest) => {
    if ('readBody' in request) await request.readBody('key');
    throw new RmbgError('processing_timeout', 'the image took longer than 1 s');
  },
  getAccount: () => Promise.reject(new Error('not called')),
};

let app: FastifyInstance | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await app?.close();
  app = undefined;
});

it('arms no timer after an error answered to an injected request whose body was read to the end', async () => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  app = buildApp({ service });
  const answer = await app.inject({
    method: 'POST',
    url: '/v1.0/removebg',
    headers: { 'x-api-key': 'rmbg_test', 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'image_url=https%3A%2F%2Fexample.com%2Fa.jpg',
  });
  expect([answer.statusCode, answer.json().errors[0].code]).toEqual([504, 'processing_timeout']);
  expect(() => vi.advanceTimersByTime(60_000)).not.toThrow();
});
