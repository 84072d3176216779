// An app built with only what it serves takes each app row's default (seconds as milliseconds), so a new app
// row needs no edit where an app is built; the web page alone stays off unless asked for.

import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { appSettingsOf, buildApp } from '../../../src/server/build-app.js';
import { SERVER_SETTINGS } from '../../../src/settings/server.js';
import { defaultsOf, settingsFor } from '../../../src/settings/setting.js';

/** No request reaches it here: the app is built and read back, never called. */
const service = {
  handleRemoveRequest: () => Promise.reject(new Error('not called')),
  getAccount: () => Promise.reject(new Error('not called')),
};

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('an app built without its settings', () => {
  it("holds each app row's default, and no web page", async () => {
    app = buildApp({ service });
    const rowDefaults = settingsFor(SERVER_SETTINGS, 'app', defaultsOf(SERVER_SETTINGS));
    expect(appSettingsOf(app)).toEqual({ ...rowDefaults, ui: false });
    const page = await app.inject({ method: 'GET', url: '/' });
    expect(page.statusCode).toBe(404);
  });

  it('serves the web page when asked, and keeps a setting it is given', async () => {
    app = buildApp({ service, ui: true, maxUploads: 3 });
    expect(appSettingsOf(app)).toMatchObject({ ui: true, maxUploads: 3 });
    const page = await app.inject({ method: 'GET', url: '/' });
    expect(page.statusCode).toBe(200);
  });
});
