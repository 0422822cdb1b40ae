"""grpc-go's RouteGuide service served by Python's grpcio, for strain's tests (not strain's code):
a second implementation of gRPC to check strain's counts against, beside grpc-go's.

    python3 route_guide.py --proto route_guide.proto [--grid 10] [--compress-replies]

The schema is route_guide.proto as grpc-go's examples ship it (edition 2023), compiled at start
with grpcio-tools' protoc into a temporary directory, so nothing generated is committed; server
reflection comes from grpcio-reflection, which offers v1alpha only (as older servers do).

It listens on 127.0.0.1 on ports the OS picks and prints one line, "listening ADDR admin ADDR",
as grpc-go's test server does. The admin port is plain HTTP/1.x: GET /counts answers what the
server saw, GET /reset zeroes it. The document has grpc-go's test server's shape (its
counts.go): calls, active, codes (by grpc-go's names), received and sent messages, per method
under "methods", reflection's apart under "reflection". It exits when its stdin closes, so a
test that dies takes it along.

RouteGuide's features are the grid of grpc-go's test server (tests/servers/grpc-go/services.go):
side x side features, the one in row r and column c named "feature r,c" at (400000000 + r*1000000,
-750000000 + c*1000000) in E7 degrees, so ListFeatures sends a count a test can compute.
RouteChat answers each note with one note. --compress-replies compresses every reply with gzip.
"""

import argparse
import importlib
import json
import math
import os
import sys
import tempfile
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import grpc_tools
from grpc_reflection.v1alpha import reflection
from grpc_tools import protoc

GRID_LATITUDE = 400000000
GRID_LONGITUDE = -750000000
GRID_STEP = 1000000

# grpc-go's names of the status codes, by number: the counts read the same for every server.
CODE_NAMES = [
    "OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
    "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
    "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
]


class Tally:
    """One method's figures. The messages are counted where grpcio (de)serializes them, so
    each is a message framed on the wire, whatever the handler does with it."""

    def __init__(self, reflection_method):
        self.reflection = reflection_method
        self.calls = 0
        self.active = 0
        self.received = 0
        self.sent = 0
        self.codes = {}


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.methods = {}

    def tally(self, method):
        with self.lock:
            if method not in self.methods:
                self.methods[method] = Tally(method.startswith("/grpc.reflection."))
            return self.methods[method]

    def add(self, tally, field, n=1):
        with self.lock:
            setattr(tally, field, getattr(tally, field) + n)

    def end(self, tally, code):
        with self.lock:
            tally.active -= 1
            name = CODE_NAMES[code] if 0 <= code < len(CODE_NAMES) else "Unknown"
            tally.codes[name] = tally.codes.get(name, 0) + 1

    def reset(self):
        with self.lock:
            for t in self.methods.values():
                # Not active: calls in flight across a reset still end.
                t.calls = t.received = t.sent = 0
                t.codes = {}

    def document(self):
        def group():
            return {"calls": 0, "active": 0, "codes": {}, "received": 0, "sent": 0, "methods": {}}

        doc = group()
        doc["reflection"] = group()
        with self.lock:
            for name, t in self.methods.items():
                if t.calls == 0 and t.active == 0 and not t.codes:
                    continue
                g = doc["reflection"] if t.reflection else doc
                figures = {"calls": t.calls, "active": t.active, "codes": dict(t.codes),
                           "received": t.received, "sent": t.sent}
                g["methods"][name] = figures
                for key in ("calls", "active", "received", "sent"):
                    g[key] += figures[key]
                for code, n in t.codes.items():
                    g["codes"][code] = g["codes"].get(code, 0) + n
        return doc


class Call:
    """Ends a call once: where its handler returns or raises, or, for a call the client
    cancelled while grpcio held its generator, when grpcio says the call is over."""

    def __init__(self, counts, tally, context):
        self.counts, self.tally, self.context = counts, tally, context
        self.ended = False
        self.lock = threading.Lock()
        counts.add(tally, "calls")
        counts.add(tally, "active")
        context.add_callback(lambda: self.end(grpc.StatusCode.CANCELLED))

    def end(self, default):
        with self.lock:
            if self.ended:
                return
            self.ended = True
        code = self.context.code() or default
        self.counts.end(self.tally, code.value[0])


class Counting(grpc.ServerInterceptor):
    """Wraps every method, reflection's too, so the counts need no help from the services."""

    def __init__(self, counts):
        self.counts = counts

    def intercept_service(self, continuation, details):
        handler = continuation(details)
        if handler is None:
            return None
        counts, tally = self.counts, self.counts.tally(details.method)

        def deserialize(data):
            counts.add(tally, "received")
            return handler.request_deserializer(data) if handler.request_deserializer else data

        def serialize(message):
            counts.add(tally, "sent")
            return handler.response_serializer(message) if handler.response_serializer else message

        def single(behavior):
            def run(request, context):
                call = Call(counts, tally, context)
                try:
                    reply = behavior(request, context)
                except BaseException:
                    call.end(grpc.StatusCode.UNKNOWN)
                    raise
                call.end(grpc.StatusCode.OK)
                return reply
            return run

        def streamed(behavior):
            def run(request, context):
                call = Call(counts, tally, context)
                try:
                    yield from behavior(request, context)
                except GeneratorExit:
                    call.end(grpc.StatusCode.CANCELLED)
                    raise
                except BaseException:
                    call.end(grpc.StatusCode.UNKNOWN)
                    raise
                call.end(grpc.StatusCode.OK)
            return run

        codec = {"request_deserializer": deserialize, "response_serializer": serialize}
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(single(handler.unary_unary), **codec)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(streamed(handler.unary_stream), **codec)
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(single(handler.stream_unary), **codec)
        return grpc.stream_stream_rpc_method_handler(streamed(handler.stream_stream), **codec)


class RouteGuide:
    def __init__(self, pb, side):
        self.pb = pb
        self.features = []
        self.by_point = {}
        for r in range(side):
            for c in range(side):
                at = pb.Point(latitude=GRID_LATITUDE + r * GRID_STEP, longitude=GRID_LONGITUDE + c * GRID_STEP)
                feature = pb.Feature(name=f"feature {r},{c}", location=at)
                self.features.append(feature)
                self.by_point[(at.latitude, at.longitude)] = feature

    def at(self, point):
        return self.by_point.get((point.latitude, point.longitude))

    def GetFeature(self, point, _context):
        return self.at(point) or self.pb.Feature(location=point)

    def ListFeatures(self, rect, _context):
        lat_lo, lat_hi = sorted((rect.lo.latitude, rect.hi.latitude))
        lon_lo, lon_hi = sorted((rect.lo.longitude, rect.hi.longitude))
        for f in self.features:
            if lat_lo <= f.location.latitude <= lat_hi and lon_lo <= f.location.longitude <= lon_hi:
                yield f

    def RecordRoute(self, points, _context):
        start = time.monotonic()
        summary = self.pb.RouteSummary()
        last = None
        for p in points:
            summary.point_count += 1
            if self.at(p) is not None:
                summary.feature_count += 1
            if last is not None:
                summary.distance += int(metres(last, p))
            last = p
        summary.elapsed_time = int(time.monotonic() - start)
        return summary

    def RouteChat(self, notes, _context):
        for note in notes:
            yield self.pb.RouteNote(location=note.location, message="heard: " + note.message)


def metres(a, b):
    """The great-circle distance, as grpc-go's test server reckons it."""
    rad = lambda e7: e7 / 1e7 * math.pi / 180  # noqa: E731
    lat1, lat2 = rad(a.latitude), rad(b.latitude)
    d_lat, d_lon = lat2 - lat1, rad(b.longitude) - rad(a.longitude)
    h = math.sin(d_lat / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin(d_lon / 2) ** 2
    return 2 * 6371000.0 * math.asin(math.sqrt(h))


def compile_proto(proto, out):
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = ["protoc", f"-I{os.path.dirname(proto)}", f"-I{include}", f"--python_out={out}", proto]
    if protoc.main(args) != 0:
        sys.exit(f"route_guide.py: cannot compile {proto}")
    sys.path.insert(0, out)
    return importlib.import_module(os.path.splitext(os.path.basename(proto))[0] + "_pb2")


def admin_server(counts):
    class Admin(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/counts":
                body = json.dumps(counts.document()).encode()
            elif self.path == "/reset":
                counts.reset()
                body = b"reset\n"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    admin = ThreadingHTTPServer(("127.0.0.1", 0), Admin)
    threading.Thread(target=admin.serve_forever, daemon=True).start()
    return admin


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proto", required=True)
    parser.add_argument("--grid", type=int, default=10)
    parser.add_argument("--compress-replies", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        pb = compile_proto(os.path.abspath(args.proto), out)
        counts = Counts()
        options = {"compression": grpc.Compression.Gzip} if args.compress_replies else {}
        # A streamed call holds a worker for its whole life; enough for the tests' -c and
        # reflection at once.
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), interceptors=[Counting(counts)], **options)
        service = pb.DESCRIPTOR.services_by_name["RouteGuide"]
        guide = RouteGuide(pb, args.grid)
        handlers = {}
        for m in service.methods:
            request, response = pb.__dict__[m.input_type.name], pb.__dict__[m.output_type.name]
            codec = {"request_deserializer": request.FromString, "response_serializer": response.SerializeToString}
            kind = {
                (False, False): grpc.unary_unary_rpc_method_handler,
                (False, True): grpc.unary_stream_rpc_method_handler,
                (True, False): grpc.stream_unary_rpc_method_handler,
                (True, True): grpc.stream_stream_rpc_method_handler,
            }[(m.client_streaming, m.server_streaming)]
            handlers[m.name] = kind(getattr(guide, m.name), **codec)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
        reflection.enable_server_reflection([service.full_name, reflection.SERVICE_NAME], server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        admin = admin_server(counts)
        print(f"listening 127.0.0.1:{port} admin 127.0.0.1:{admin.server_address[1]}", flush=True)
        sys.stdin.read()
        server.stop(0)


if __name__ == "__main__":
    main()
