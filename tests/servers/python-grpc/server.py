"""A gRPC test server for strain's tests, on Python's grpcio: serves every service of the
--proto file on 127.0.0.1 (a port the OS picks, printed as "PORT <n>" on the first line of
stdout), with server reflection unless --no-reflection, over TLS when given --tls-cert and
--tls-key (PEM files; gRPC offers ALPN h2), else plain h2c. It stops when its stdin closes, so a
test that drops the pipe (or dies) takes the server with it.

Each method answers with defaults: a unary or client-streaming call gets one empty response,
a server-streaming call three, a bidirectional call one per request. The .proto is compiled at
start with grpcio-tools into a temporary directory, so nothing generated is committed.
"""

import argparse
import importlib
import os
import sys
import tempfile
from concurrent import futures

import grpc
import grpc_tools
from google.protobuf import message_factory
from grpc_reflection.v1alpha import reflection
from grpc_tools import protoc


def compile_proto(proto, out):
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = ["protoc", f"-I{os.path.dirname(proto)}", f"-I{include}", f"--python_out={out}", proto]
    if protoc.main(args) != 0:
        sys.exit(f"server.py: cannot compile {proto}")
    sys.path.insert(0, out)
    name = os.path.splitext(os.path.basename(proto))[0] + "_pb2"
    return importlib.import_module(name)


def handler(method):
    request = message_factory.GetMessageClass(method.input_type)
    response = message_factory.GetMessageClass(method.output_type)
    codec = {"request_deserializer": request.FromString, "response_serializer": response.SerializeToString}

    def bidi(requests, _context):
        for _ in requests:
            yield response()

    def client_streaming(requests, _context):
        for _ in requests:
            pass
        return response()

    def server_streaming(_request, _context):
        for _ in range(3):
            yield response()

    def unary(_request, _context):
        return response()

    if method.client_streaming and method.server_streaming:
        return grpc.stream_stream_rpc_method_handler(bidi, **codec)
    if method.client_streaming:
        return grpc.stream_unary_rpc_method_handler(client_streaming, **codec)
    if method.server_streaming:
        return grpc.unary_stream_rpc_method_handler(server_streaming, **codec)
    return grpc.unary_unary_rpc_method_handler(unary, **codec)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proto", required=True)
    parser.add_argument("--no-reflection", action="store_true")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        module = compile_proto(os.path.abspath(args.proto), out)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        names = []
        for service in module.DESCRIPTOR.services_by_name.values():
            handlers = {m.name: handler(m) for m in service.methods}
            server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
            names.append(service.full_name)
        if not args.no_reflection:
            reflection.enable_server_reflection(names + [reflection.SERVICE_NAME], server)
        if args.tls_cert:
            with open(args.tls_key, "rb") as key, open(args.tls_cert, "rb") as cert:
                credentials = grpc.ssl_server_credentials([(key.read(), cert.read())])
            port = server.add_secure_port("127.0.0.1:0", credentials)
        else:
            port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        print(f"PORT {port}", flush=True)
        sys.stdin.read()
        server.stop(0)


if __name__ == "__main__":
    main()
