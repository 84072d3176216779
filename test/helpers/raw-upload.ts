// A client that declares a large body and keeps sending it until the server answers (or closes): the way
// an attacker uploads, with how much of the body it had sent when the answer began. A raw socket, so a write
// failing after the answer arrived (the server stopped reading) cannot hide the answer, as it can in node:http.

import { readFileSync } from 'node:fs';
import net from 'node:net';

export interface UploadAnswer {
  status: number;
  /** Bytes of the request (after its head) written when the answer's first byte arrived. */
  sentBeforeAnswer: number;
  /** What arrived (status line, headers, body), as text. */
  text: string;
}

/** POSTs `totalBytes` (`prefix`, then filler) to `url`, honouring backpressure; stops sending at the first answer byte. */
export function uploadUntilAnswered(
  url: string,
  options: { headers: Record<string, string>; prefix: string; totalBytes: number },
): Promise<UploadAnswer> {
  const { hostname, port, pathname } = new URL(url);
  const filler = Buffer.alloc(64 * 1024, 'A');
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let text = '';
    let sentBeforeAnswer = -1;
    let sent = 0;
    const head = Object.entries({
      host: `${hostname}:${port}`,
      ...options.headers,
      'content-length': String(options.totalBytes),
    })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.on('data', (chunk: Buffer) => {
      if (sentBeforeAnswer < 0) sentBeforeAnswer = sent;
      text += chunk.toString('latin1');
      // The answer is complete once its declared body arrived; then leave.
      const end = text.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(text);
      if (end >= 0 && length && text.length >= end + 4 + Number(length[1])) socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (!status) reject(new Error(`no answer after ${sent} bytes sent (got ${JSON.stringify(text.slice(0, 80))})`));
      else resolve({ status: Number(status[1]), sentBeforeAnswer, text });
    });
    socket.write(`POST ${pathname} HTTP/1.1\r\n${head}\r\n${options.prefix}`);
    sent = options.prefix.length;
    const pump = (): void => {
      while (sentBeforeAnswer < 0 && sent < options.totalBytes && !socket.destroyed) {
        const piece = filler.subarray(0, Math.min(filler.length, options.totalBytes - sent));
        sent += piece.length;
        if (!socket.write(piece)) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });
}

/** The most a loopback connection's kernel buffers can hold unread: the sender's send buffer and the receiver's
 * receive buffer at their largest (Linux's tcp_wmem and tcp_rmem; 4 and 6 MiB, the kernel's defaults, elsewhere).
 * A client can write this much before a server that reads nothing of the body answers. */
export function socketBufferBytes(): number {
  const largest = (name: string, fallback: number) => {
    try {
      return Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]) || fallback;
    } catch {
      return fallback;
    }
  };
  return largest('tcp_wmem', 4 << 20) + largest('tcp_rmem', 6 << 20);
}

/** The error code of an answer's JSON error body. */
export function answerCode(answer: UploadAnswer): string {
  const body = answer.text.slice(answer.text.indexOf('\r\n\r\n') + 4);
  return (JSON.parse(body) as { errors: Array<{ code: string }> }).errors[0]!.code;
}
