// grpc-go's RouteGuide service served by Node's @grpc/grpc-js, for strain's tests (not strain's
// code): a third implementation of gRPC to check strain's counts against, beside grpc-go and
// Python's grpcio.
//
//     node grpc-route-guide.js --proto route_guide.proto [--grid 10] [--compress-replies]
//
// The schema is route_guide.proto as grpc-go's examples ship it (edition 2023), read at start by
// @grpc/proto-loader (protobufjs 7.6 parses editions); server reflection, v1 and v1alpha, is
// @grpc/reflection's, which describes the schema from proto-loader's package definition.
//
// It listens on 127.0.0.1 on ports the OS picks and prints one line, "listening ADDR admin ADDR",
// as grpc-go's test server does. The admin port is plain HTTP/1.x: GET /counts answers what the
// server saw, GET /reset zeroes it, in grpc-go's test server's shape (its counts.go): calls,
// active, codes (by grpc-go's names), received and sent messages, per method under "methods",
// reflection's apart under "reflection". It exits when its stdin closes, so a test that dies
// takes it along.
//
// RouteGuide's features are the grid of grpc-go's test server (tests/servers/grpc-go/services.go):
// side x side features, the one in row r and column c named "feature r,c" at
// (400000000 + r*1000000, -750000000 + c*1000000) in E7 degrees, so ListFeatures sends a count a
// test can compute. RouteChat answers each note with one note.
//
// --compress-replies sets grpc-js's default compression options to gzip. grpc-js 1.14 reads them
// only in its client: its server frames every reply uncompressed (server-interceptors.js,
// "response compression is currently not supported") and says `grpc-encoding: identity`, so a
// test that gives this flag learns what a Node server really sends.
'use strict';

const http = require('http');
const path = require('path');
const { parseArgs } = require('util');

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { ReflectionService } = require('@grpc/reflection');

const GRID_LATITUDE = 400000000;
const GRID_LONGITUDE = -750000000;
const GRID_STEP = 1000000;

// grpc-go's names of the status codes, by number: the counts read the same for every server.
const CODE_NAMES = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists',
  'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange',
  'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated',
];

const { values: opts } = parseArgs({
  options: {
    proto: { type: 'string' },
    grid: { type: 'string', default: '10' },
    'compress-replies': { type: 'boolean', default: false },
  },
});
if (!opts.proto) {
  process.stderr.write('grpc-route-guide.js: --proto FILE is required\n');
  process.exit(2);
}

const tallies = new Map();

function tally(method) {
  let t = tallies.get(method);
  if (!t) {
    t = { reflection: method.startsWith('/grpc.reflection.'), calls: 0, active: 0, received: 0, sent: 0, codes: {} };
    tallies.set(method, t);
  }
  return t;
}

function document() {
  const group = () => ({ calls: 0, active: 0, codes: {}, received: 0, sent: 0, methods: {} });
  const doc = group();
  doc.reflection = group();
  for (const [name, t] of tallies) {
    if (t.calls === 0 && t.active === 0 && Object.keys(t.codes).length === 0) continue;
    const g = t.reflection ? doc.reflection : doc;
    g.methods[name] = { calls: t.calls, active: t.active, codes: { ...t.codes }, received: t.received, sent: t.sent };
    for (const key of ['calls', 'active', 'received', 'sent']) g[key] += t[key];
    for (const [code, n] of Object.entries(t.codes)) g.codes[code] = (g.codes[code] || 0) + n;
  }
  return doc;
}

function reset() {
  for (const t of tallies.values()) {
    // Not active: calls in flight across a reset still end.
    Object.assign(t, { calls: 0, received: 0, sent: 0, codes: {} });
  }
}

// Counts every call, reflection's too, as grpc-js passes its messages and status through, so
// the services need no help. A call ends once: at its status, or when the client cancels it.
function counting(descriptor, call) {
  const t = tally(descriptor.path);
  t.calls += 1;
  t.active += 1;
  let ended = false;
  const end = (code) => {
    if (ended) return;
    ended = true;
    t.active -= 1;
    const name = CODE_NAMES[code] || 'Unknown';
    t.codes[name] = (t.codes[name] || 0) + 1;
  };
  const listener = new grpc.ServerListenerBuilder()
    .withOnReceiveMessage((message, next) => {
      t.received += 1;
      next(message);
    })
    .withOnCancel(() => end(grpc.status.CANCELLED))
    .build();
  const responder = new grpc.ResponderBuilder()
    .withStart((next) => next(listener))
    .withSendMessage((message, next) => {
      t.sent += 1;
      next(message);
    })
    .withSendStatus((status, next) => {
      end(status.code);
      next(status);
    })
    .build();
  return new grpc.ServerInterceptingCall(call, responder);
}

function routeGuide(side) {
  const features = [];
  const byPoint = new Map();
  for (let r = 0; r < side; r++) {
    for (let c = 0; c < side; c++) {
      const location = { latitude: GRID_LATITUDE + r * GRID_STEP, longitude: GRID_LONGITUDE + c * GRID_STEP };
      const feature = { name: `feature ${r},${c}`, location };
      features.push(feature);
      byPoint.set(`${location.latitude},${location.longitude}`, feature);
    }
  }
  const at = (p) => byPoint.get(`${p.latitude},${p.longitude}`);
  return {
    GetFeature(call, callback) {
      callback(null, at(call.request) || { name: '', location: call.request });
    },
    ListFeatures(call) {
      const { lo, hi } = call.request;
      const [latLo, latHi] = [Math.min(lo.latitude, hi.latitude), Math.max(lo.latitude, hi.latitude)];
      const [lonLo, lonHi] = [Math.min(lo.longitude, hi.longitude), Math.max(lo.longitude, hi.longitude)];
      for (const f of features) {
        const { latitude, longitude } = f.location;
        if (latitude >= latLo && latitude <= latHi && longitude >= lonLo && longitude <= lonHi) call.write(f);
      }
      call.end();
    },
    RecordRoute(call, callback) {
      const start = Date.now();
      const summary = { point_count: 0, feature_count: 0, distance: 0, elapsed_time: 0 };
      let last = null;
      call.on('data', (p) => {
        summary.point_count += 1;
        if (at(p)) summary.feature_count += 1;
        if (last) summary.distance += Math.trunc(metres(last, p));
        last = p;
      });
      call.on('end', () => {
        summary.elapsed_time = Math.trunc((Date.now() - start) / 1000);
        callback(null, summary);
      });
      // A cancelled call is counted by the interceptor; nothing is left to answer.
      call.on('error', () => {});
    },
    RouteChat(call) {
      call.on('data', (note) => call.write({ location: note.location, message: `heard: ${note.message}` }));
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  };
}

// The great-circle distance, as grpc-go's test server reckons it.
function metres(a, b) {
  const rad = (e7) => (e7 / 1e7) * (Math.PI / 180);
  const lat1 = rad(a.latitude);
  const lat2 = rad(b.latitude);
  const dLat = lat2 - lat1;
  const dLon = rad(b.longitude) - rad(a.longitude);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(lat1) * Math.cos(lat2) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371000 * Math.asin(Math.sqrt(h));
}

// proto-loader's options as grpc-go's JSON would read: field names as written, every field
// present in a reply.
const definition = protoLoader.loadSync(path.resolve(opts.proto), { keepCase: true, defaults: true });
const options = { interceptors: [counting] };
if (opts['compress-replies']) {
  options['grpc.default_compression_algorithm'] = 2;
  options['grpc.default_compression_level'] = 2;
}
const server = new grpc.Server(options);
server.addService(definition['routeguide.RouteGuide'], routeGuide(Number(opts.grid)));
new ReflectionService(definition).addToServer(server);

const admin = http.createServer((req, res) => {
  if (req.method !== 'GET' || (req.url !== '/counts' && req.url !== '/reset')) {
    res.writeHead(404).end();
    return;
  }
  if (req.url === '/reset') reset();
  const body = req.url === '/counts' ? JSON.stringify(document()) : 'reset\n';
  res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
});

server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) {
    process.stderr.write(`grpc-route-guide.js: ${err.message}\n`);
    process.exit(1);
  }
  admin.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening 127.0.0.1:${port} admin 127.0.0.1:${admin.address().port}\n`);
  });
});

process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
