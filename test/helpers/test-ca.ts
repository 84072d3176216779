// A throwaway certificate authority and a server certificate signed by it, made with the openssl CLI
// in a temp dir at test time, so HTTPS tests run against real TLS with nothing trusted beyond the test.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isIP } from 'node:net';

export interface TestCa {
  dir: string;
  /** PEM of the CA certificate: pass as `ca` in process, or its path as NODE_EXTRA_CA_CERTS to a child process. */
  caCert: string;
  caCertPath: string;
  /** The server's key and certificate (PEM), for https.createServer. */
  key: string;
  cert: string;
  keyPath: string;
  certPath: string;
  /** Deletes the temp dir. */
  cleanup(): void;
}

/**
 * Creates a CA and a server certificate for `names` (DNS names and IP addresses, e.g.
 * ['localhost', '127.0.0.1']), valid from now for two days.
 */
export function createTestCa(names: readonly string[] = ['localhost', '127.0.0.1']): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'rmbg-test-ca-'));
  const path = (file: string): string => join(dir, file);
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

  openssl(
    'req',
    '-x509',
    ...ecKey,
    '-keyout',
    path('ca.key'),
    '-out',
    path('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=rmbg throwaway test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl(
    'req',
    '-new',
    ...ecKey,
    '-keyout',
    path('server.key'),
    '-out',
    path('server.csr'),
    '-subj',
    `/CN=${names[0] ?? 'localhost'}`,
  );
  const altNames = names.map((name) => (isIP(name) ? `IP:${name}` : `DNS:${name}`)).join(',');
  writeFileSync(
    path('server.ext'),
    [
      `subjectAltName=${altNames}`,
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
    ].join('\n'),
  );
  openssl(
    'x509',
    '-req',
    '-in',
    path('server.csr'),
    '-CA',
    path('ca.crt'),
    '-CAkey',
    path('ca.key'),
    '-set_serial',
    String(Date.now()),
    '-days',
    '2',
    '-sha256',
    '-extfile',
    path('server.ext'),
    '-out',
    path('server.crt'),
  );

  return {
    dir,
    caCert: readFileSync(path('ca.crt'), 'utf8'),
    caCertPath: path('ca.crt'),
    key: readFileSync(path('server.key'), 'utf8'),
    cert: readFileSync(path('server.crt'), 'utf8'),
    keyPath: path('server.key'),
    certPath: path('server.crt'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
