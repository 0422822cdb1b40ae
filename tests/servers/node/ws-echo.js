// A WebSocket echo server from Node's `ws` package with its default settings, for strain's
// tests (not strain's code).
//
//     node ws-echo.js
//
// Listens on 127.0.0.1 on a free port and prints `listening PORT`; echoes every message. On
// SIGINT or SIGTERM it prints one JSON line: connections upgraded, the most open at once, and
// messages echoed, so a test compares strain's counts with the server's own.
'use strict';

const { WebSocketServer } = require('ws');

const counts = { connections: 0, open: 0, peak_open: 0, messages: 0 };
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });

wss.on('connection', (ws) => {
  counts.connections += 1;
  counts.open += 1;
  counts.peak_open = Math.max(counts.peak_open, counts.open);
  ws.on('message', (data, isBinary) => {
    counts.messages += 1;
    ws.send(data, { binary: isBinary });
  });
  ws.on('close', () => {
    counts.open -= 1;
  });
  // A peer that resets is a lost connection, not a crash of the server.
  ws.on('error', () => {});
});

wss.on('listening', () => {
  process.stdout.write(`listening ${wss.address().port}\n`);
});

function stop() {
  process.stdout.write(`${JSON.stringify(counts)}\n`, () => process.exit(0));
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
