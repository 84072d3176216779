import { describe, expect, it } from 'vitest';
import { endpointUrl, parseBaseUrl } from '../../../src/client/endpoint-url.js';

describe('endpointUrl', () => {
  it.each([
    ['https://h', 'https://h/v1.0/removebg'],
    ['https://h/', 'https://h/v1.0/removebg'],
    ['https://h/api', 'https://h/api/v1.0/removebg'],
    ['https://h/api/', 'https://h/api/v1.0/removebg'],
    ['https://h/api/v1.0', 'https://h/api/v1.0/removebg'],
    ['https://h/api/v1.0/', 'https://h/api/v1.0/removebg'],
    ['http://127.0.0.1:5000', 'http://127.0.0.1:5000/v1.0/removebg'],
    ['http://127.0.0.1:5000/v1.0?x=1#frag', 'http://127.0.0.1:5000/v1.0/removebg'],
  ])('keeps the /v1.0 prefix under base %s', (base, expected) => {
    expect(endpointUrl(base, 'removebg')).toBe(expected);
  });

  it('builds the account endpoint', () => {
    expect(endpointUrl('https://h/api', 'account')).toBe('https://h/api/v1.0/account');
  });

  it.each([
    ['not a url', /absolute http/],
    ['ftp://h/api', /http:\/\/ or https:\/\//],
    ['https://user:pw@h/', /must not contain a user name or password/],
  ])('rejects %s as a usage error that says what is allowed', (base, message) => {
    expect(() => parseBaseUrl(base)).toThrow(message);
    try {
      parseBaseUrl(base);
    } catch (error) {
      expect((error as { code: string }).code).toBe('usage_error');
    }
  });
});
