import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A local HTTP receiver on 127.0.0.1 that records every request and answers as scripted. */
export async function startReceiver(answer: (r: Received, n: number) => { status: number; headers?: Record<string, string> } | 'hang' = () => ({ status: 200 })) {
  const requests: Received[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(r);
      const a = answer(r, requests.length);
      if (a === 'hang') {
        hanging.push(res);
        return;
      }
      res.writeHead(a.status, { 'Content-Type': 'application/json', ...a.headers });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    async close() {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
