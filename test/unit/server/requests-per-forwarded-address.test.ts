// Behind a trusted proxy every connection comes from the proxy, so the per-address cap counts each client's
// requests in progress by its forwarded address instead (src/server/fair-connections.ts).

import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../src/server/build-app.js';
import type { Service } from '../../../src/service/index.js';
import { TEST_APP_LIMITS } from '../../helpers/sharp-test-engine.js';

let app: FastifyInstance;
afterEach(() => app?.close());

describe('requests in progress per forwarded address', () => {
  it('with --max-connections-per-address 2: a third request of one client behind the proxy gets 429, another client is served', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    let markTwoStarted: () => void = () => undefined;
    const twoStarted = new Promise<void>((resolve) => (markTwoStarted = resolve));
    const service = {
      handleRemoveRequest: async () => {
        throw new Error('not called');
      },
      getAccount: async () => {
        started += 1;
        if (started === 2) markTwoStarted();
        await held;
        return { account: { attributes: {} }, rateLimit: undefined };
      },
    } as unknown as Pick<Service, 'handleRemoveRequest' | 'getAccount'>;
    app = buildApp({ service, ...TEST_APP_LIMITS, maxConnectionsPerAddress: 2, trustProxy: ['10.0.0.2'] });
    const account = (client: string) =>
      app.inject({
        method: 'GET',
        url: '/v1.0/account',
        remoteAddress: '10.0.0.2',
        headers: { 'x-api-key': 'k', 'x-forwarded-for': client },
      });

    const inProgress = [account('203.0.113.7'), account('203.0.113.7')];
    await twoStarted;
    const third = await account('203.0.113.7');
    expect(third.statusCode).toBe(429);
    expect(third.json()).toMatchObject({ errors: [{ code: 'rate_limited' }] });
    expect(third.headers['retry-after']).toBe('2');

    const other = account('198.51.100.1');
    release();
    expect((await other).statusCode).toBe(200);
    expect((await Promise.all(inProgress)).map((answer) => answer.statusCode)).toEqual([200, 200]);
    // Done, so the client's places are free again.
    expect((await account('203.0.113.7')).statusCode).toBe(200);
  });
});
