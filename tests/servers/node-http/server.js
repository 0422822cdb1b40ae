// Node's own `http` and `http2` modules with their default settings, for strain's roster of
// real servers (tests/integration/roster.rs): `http` on one port (HTTP/1.1, with Node's
// 5-second keep-alive timeout), `http2.createServer` on another (h2c with prior knowledge),
// and `http2.createSecureServer` with `allowHTTP1` on a TLS port (h2 or HTTP/1.1 by ALPN).
// Each response is written to the access log as "STATUS METHOD PATH PROTO" when it finishes.
//
//   node server.js H1_PORT H2C_PORT TLS_PORT CERT KEY LOG
'use strict';
const fs = require('fs');
const http = require('http');
const http2 = require('http2');

const [h1Port, h2cPort, tlsPort, cert, key, logPath] = process.argv.slice(2);
const log = fs.openSync(logPath, 'a');
// The static file's modification time, fixed so that a test can ask for a 304 with it.
const modified = new Date(Date.UTC(2017, 6, 14, 2, 40, 0)).toUTCString();
const body = 'hello roster\n';

function handle(req, res) {
  res.on('finish', () => {
    fs.writeSync(log, `${res.statusCode} ${req.method} ${req.url.split('?')[0]} HTTP/${req.httpVersion}\n`);
  });
  const path = req.url.split('?')[0];
  if (path === '/nocontent') {
    res.writeHead(204);
    res.end();
  } else if (path === '/chunked') {
    // No length: HTTP/1.1 sends it chunked.
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('hello ');
    res.end('chunked\n');
  } else if (path === '/close') {
    // An HTTP/2 response must not carry Connection; over HTTP/1.1 Node closes after it.
    if (req.httpVersionMajor === 1) res.setHeader('connection', 'close');
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
    res.end(body);
  } else if (path === '/post') {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => {
      const got = Buffer.concat(parts);
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': got.length });
      res.end(got);
    });
  } else if (req.headers['if-modified-since'] === modified) {
    res.writeHead(304, { 'last-modified': modified });
    res.end();
  } else {
    res.writeHead(200, { 'content-type': 'text/html', 'content-length': body.length, 'last-modified': modified });
    res.end(req.method === 'HEAD' ? undefined : body);
  }
}

http.createServer(handle).listen(Number(h1Port), '127.0.0.1');
http2.createServer(handle).listen(Number(h2cPort), '127.0.0.1');
http2
  .createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), allowHTTP1: true }, handle)
  .listen(Number(tlsPort), '127.0.0.1');
