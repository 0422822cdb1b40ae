"""A WebSocket echo server from Python's `websockets`, for strain's tests (not strain's code).

    echo.py [--subprotocol NAME] [--no-deflate] [--close-after N --close-code C] [--tls CERT KEY]

Listens on 127.0.0.1 on a free port and prints `listening PORT`; echoes every message. With
--close-after it closes each connection with --close-code after echoing N messages. On SIGINT
or SIGTERM it prints one JSON line: connections upgraded, the most open at once, messages
echoed, and the number of compressed connections (permessage-deflate agreed).
"""

import argparse
import asyncio
import json
import resource
import signal
import ssl
import sys

from websockets.asyncio.server import serve
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory

counts = {"connections": 0, "open": 0, "peak_open": 0, "messages": 0, "deflate": 0}


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--subprotocol", action="append", default=[])
    p.add_argument("--no-deflate", action="store_true")
    p.add_argument("--close-after", type=int, default=0)
    p.add_argument("--close-code", type=int, default=1000)
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    a = p.parse_args()
    # Thousands of held connections need as many descriptors as the machine allows.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    async def echo(ws):
        counts["connections"] += 1
        counts["open"] += 1
        counts["peak_open"] = max(counts["peak_open"], counts["open"])
        try:
            await serve_one(ws)
        finally:
            counts["open"] -= 1

    async def serve_one(ws):
        if any(e.name == "permessage-deflate" for e in ws.protocol.extensions):
            counts["deflate"] += 1
        n = 0
        async for message in ws:
            await ws.send(message)
            counts["messages"] += 1
            n += 1
            if a.close_after and n >= a.close_after:
                await ws.close(a.close_code, "enough")
                return

    ctx = None
    if a.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls[0], a.tls[1])
    extensions = None if a.no_deflate else [ServerPerMessageDeflateFactory()]
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set_result, None)
    async with serve(
        echo,
        "127.0.0.1",
        0,
        subprotocols=a.subprotocol or None,
        extensions=extensions,
        compression=None,
        ssl=ctx,
        max_size=None,
        max_queue=None,
        ping_interval=None,
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening {port}", flush=True)
        await stop
    print(json.dumps(counts), flush=True)


asyncio.run(main())
sys.exit(0)
