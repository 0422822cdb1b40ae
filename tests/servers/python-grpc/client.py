"""A gRPC client that is not strain's: Python's grpcio, for tests/integration/origin_grpc.rs.

It compiles strain's echo.proto with grpc_tools at run time (into a temporary directory, so
nothing generated is kept in the tree), makes the calls one command asks for against
`strain origin --grpc`, and prints what came back as one JSON document on stdout.

    client.py TARGET [--tls-ca PEM] methods [--count N] [--messages N] [--reply-size N]
    client.py TARGET [--tls-ca PEM] unary N
    client.py TARGET [--tls-ca PEM] reflect
    client.py TARGET [--tls-ca PEM] call PATH

TARGET is host:port; --tls-ca makes the channel TLS, trusting that certificate.
"""

import argparse
import json
import os
import queue
import shutil
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc

PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "src", "grpc", "proto")
REFLECTION_V1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"


def compiled():
    """echo_pb2 and echo_pb2_grpc, generated from echo.proto for this run."""
    out = tempfile.mkdtemp(prefix="strain-grpc-")
    code = protoc.main(["protoc", f"-I{PROTO_DIR}", f"--python_out={out}", f"--grpc_python_out={out}", "echo.proto"])
    if code != 0:
        sys.exit(f"protoc failed on {PROTO_DIR}/echo.proto")
    sys.path.insert(0, out)
    import echo_pb2  # noqa: E402
    import echo_pb2_grpc  # noqa: E402

    # Imported, the modules need their files no more: nothing is left in /tmp after a run.
    sys.path.remove(out)
    shutil.rmtree(out)
    return echo_pb2, echo_pb2_grpc


def channel(target, ca):
    if ca is None:
        return grpc.insecure_channel(target)
    with open(ca, "rb") as f:
        return grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=f.read()))


def replies(items):
    return [
        {"message": r.message, "payload_len": len(r.payload), "sequence": r.sequence, "received": r.received}
        for r in items
    ]


def outcome(call):
    """Runs call() -> replies; the status name and the replies (none when it failed)."""
    try:
        return {"status": "OK", "replies": replies(call())}
    except grpc.RpcError as e:
        return {"status": e.code().name, "details": e.details(), "replies": []}


def methods(ch, args):
    """One call of each method."""
    pb, pb_grpc = compiled()
    stub = pb_grpc.EchoStub(ch)
    req = lambda m: pb.EchoRequest(message=m, payload=b"p", count=args.count, reply_size=args.reply_size)
    out = {
        "unary": outcome(lambda: [stub.Unary(req("u"), timeout=30)]),
        "server_stream": outcome(lambda: list(stub.ServerStream(req("s"), timeout=30))),
        "client_stream": outcome(
            lambda: [stub.ClientStream(iter([req(f"c{k}") for k in range(args.messages)]), timeout=30)]
        ),
    }

    def bidi():
        # One request at a time, the next only after its reply: each reply comes before the
        # client ends its side.
        sent = queue.Queue()
        got = []
        responses = stub.Bidi(iter(sent.get, None), timeout=30)
        for k in range(args.messages):
            sent.put(req(f"b{k}"))
            got.append(next(responses))
        sent.put(None)
        got.extend(responses)
        return got

    out["bidi"] = outcome(bidi)
    return out


def unary(ch, args):
    """N unary calls one after the other: statuses by name, and latencies in ms."""
    pb, pb_grpc = compiled()
    stub = pb_grpc.EchoStub(ch)
    statuses = {}
    latency_ms = []
    for k in range(args.n):
        start = time.monotonic()
        try:
            stub.Unary(pb.EchoRequest(message=str(k)), timeout=30)
            name = "OK"
        except grpc.RpcError as e:
            name = e.code().name
        latency_ms.append((time.monotonic() - start) * 1000)
        statuses[name] = statuses.get(name, 0) + 1
    latency_ms.sort()
    return {"statuses": statuses, "latency_ms": {"min": latency_ms[0], "max": latency_ms[-1]}}


def reflect(ch, _args):
    """Reflection: v1alpha through grpcio-reflection's own client, v1 by its path with the same
    messages (they are the same on the wire)."""
    from google.protobuf.descriptor_pool import DescriptorPool
    from grpc_reflection.v1alpha import reflection_pb2
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

    db = ProtoReflectionDescriptorDatabase(ch)
    alpha = {"services": sorted(db.get_services())}
    alpha["files"] = {
        s: db.FindFileContainingSymbol(s).name
        for s in ["strain.echo.v1.Echo", "strain.echo.v1.Echo.Bidi", "strain.echo.v1.EchoRequest"]
    }
    pool = DescriptorPool(db)
    service = pool.FindServiceByName("strain.echo.v1.Echo")
    alpha["methods"] = [
        [m.name, m.client_streaming, m.server_streaming, m.input_type.full_name, m.output_type.full_name]
        for m in service.methods
    ]
    try:
        db.FindFileContainingSymbol("strain.echo.v1.Nope")
        alpha["unknown"] = "found"
    except KeyError:
        alpha["unknown"] = "KeyError"

    info = ch.stream_stream(
        REFLECTION_V1,
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    asks = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="strain.echo.v1.EchoReply"),
        reflection_pb2.ServerReflectionRequest(file_by_filename="echo.proto"),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="strain.echo.v1.Nope"),
    ]
    answers = list(info(iter(asks), timeout=30))
    from google.protobuf.descriptor_pb2 import FileDescriptorProto

    def file_name(answer):
        return FileDescriptorProto.FromString(answer.file_descriptor_response.file_descriptor_proto[0]).name

    v1 = {
        "services": sorted(s.name for s in answers[0].list_services_response.service),
        "file_of_symbol": file_name(answers[1]),
        "file_by_name": file_name(answers[2]),
        "unknown_error_code": answers[3].error_response.error_code,
    }
    return {"v1alpha": alpha, "v1": v1}


def call(ch, args):
    """One call to PATH with an empty message: its status."""
    try:
        ch.unary_unary(args.path)(b"", timeout=30)
        return {"status": "OK"}
    except grpc.RpcError as e:
        return {"status": e.code().name, "details": e.details()}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("target")
    p.add_argument("--tls-ca")
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("methods")
    m.add_argument("--count", type=int, default=0)
    m.add_argument("--messages", type=int, default=3)
    m.add_argument("--reply-size", type=int, default=0)
    sub.add_parser("unary").add_argument("n", type=int)
    sub.add_parser("reflect")
    sub.add_parser("call").add_argument("path")
    args = p.parse_args()
    with channel(args.target, args.tls_ca) as ch:
        result = {"methods": methods, "unary": unary, "reflect": reflect, "call": call}[args.command](ch, args)
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
