// image_url names are resolved by c-ares, not getaddrinfo on libuv's threadpool: with every threadpool
// thread busy (as sharp keeps them under load), resolution still answers at once. A tiny DNS server on
// 127.0.0.1 answers the queries; nothing leaves the machine.

import { pbkdf2 } from 'node:crypto';
import dgram from 'node:dgram';
import { lookup, Resolver } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveHost } from '../../../src/image-url/resolve-host.js';

let server: dgram.Socket;
/** A c-ares resolver asking only the DNS server of this test. */
const resolver = new Resolver();

/** Answers every A query with 203.0.113.7 and every other query with no records. */
function answer(query: Buffer): Buffer {
  let end = 12;
  while (query[end] !== 0) end += (query[end] as number) + 1;
  const question = query.subarray(12, end + 5);
  const type = query.readUInt16BE(end + 1);
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2);
  header.writeUInt16BE(0x8180, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(type === 1 ? 1 : 0, 6);
  const record = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 203, 0, 113, 7]);
  return Buffer.concat([header, question, ...(type === 1 ? [record] : [])]);
}

beforeAll(async () => {
  server = dgram.createSocket('udp4');
  server.on('message', (query, peer) => server.send(answer(query), peer.port, peer.address));
  await new Promise<void>((resolve) => server.bind(0, '127.0.0.1', resolve));
  resolver.setServers([`127.0.0.1:${server.address().port}`]);
});

afterAll(() => {
  server.close();
});

describe('resolveHost', () => {
  it('answers while every libuv threadpool thread is busy', async () => {
    const busy: Array<Promise<void>> = [];
    let busyDone = 0;
    // Four slow jobs fill the default pool of four threads for a second or more.
    for (let i = 0; i < 4; i++)
      busy.push(new Promise((resolve) => pbkdf2('x', 'y', 600_000, 32, 'sha512', () => resolve(void busyDone++))));
    // The control: getaddrinfo (dns.lookup, what the fetcher used before) needs a threadpool thread.
    const lookedUp = lookup('localhost').then(() => busyDone);
    const addresses = await resolveHost('photos.example.test', resolver);
    const doneWhenResolved = busyDone;
    await Promise.all(busy);
    expect(await lookedUp).toBeGreaterThan(0);
    expect(addresses).toEqual([{ address: '203.0.113.7', family: 4 }]);
    expect(doneWhenResolved).toBe(0);
  });

  it('answers localhost with the loopback addresses itself (c-ares does not read /etc/hosts)', async () => {
    expect(await resolveHost('localhost')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
  });
});
