"""A Server-Sent Events server on Python's aiohttp, for strain's tests (not strain's code).

    python3 sse_aiohttp.py PORT EVENTS_PER_S COUNT

Listens on 127.0.0.1:PORT and prints one line, `ready`, once it accepts connections.

GET /events answers `text/event-stream`: `retry: 500` first, then events `id: N` / `data: tick N`
numbered from 1 up to COUNT (0: endless). A request with a numeric `Last-Event-ID` resumes after
that id, so a client that reconnects as a browser does gets COUNT events in all; one that already
has the last of them gets 204 No Content, which tells an EventSource to stop reconnecting.

POST /chat takes a JSON object (OpenAI's chat-completion request; "model" is echoed back) and
answers an OpenAI-style stream: a role chunk, five content chunks ("This is a test."), a
finish_reason "stop" chunk and `data: [DONE]`, 8 events in all. A body that is not a JSON
object gets 400 with an OpenAI-style error.

Every stream sends EVENTS_PER_S events a second (0: as fast as the client reads), on a fixed
schedule from its start, so a slow wake-up is caught up in one write rather than lost.

On SIGTERM or SIGINT it prints one line, `streams N events M`: the event-stream responses begun
(both paths) and the events written to them (blocks with data, [DONE] included, `retry` not).
Nothing else is printed: no access log.
"""

import asyncio
import itertools
import json
import resource
import signal
import sys
import time

from aiohttp import web

CHAT_WORDS = ["This", " is", " a", " test", "."]
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

counts = {"streams": 0, "events": 0}
chat_ids = itertools.count(1)


def chat_events(model):
    """The blocks of one chat completion stream, as OpenAI's API sends them."""
    cid = f"chatcmpl-{next(chat_ids)}"
    created = int(time.time())

    def chunk(delta, finish):
        body = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"

    blocks = [chunk({"role": "assistant", "content": ""}, None)]
    blocks += [chunk({"content": word}, None) for word in CHAT_WORDS]
    blocks.append(chunk({}, "stop"))
    blocks.append(b"data: [DONE]\n\n")
    return blocks


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: sse_aiohttp.py PORT EVENTS_PER_S COUNT")
    port, rate, count = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    # Many held streams need as many descriptors as the machine allows.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(serve(port, rate, count))


async def serve(port, rate, count):
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()

    async def send(resp, block, first, last):
        """Writes block(i) for i in first..last (last None: endless), paced at `rate`, until the
        client goes or the server stops. Each wake-up writes every event due by then in one go."""
        start = loop.time()
        i = first
        while (last is None or i <= last) and not stopping.is_set():
            if rate > 0:
                due = first + int((loop.time() - start) * rate)
                if due < i:
                    await asyncio.sleep(start + (i - first) / rate - loop.time())
                    continue
            else:
                due = i + 63
            if last is not None:
                due = min(due, last)
            await resp.write(b"".join(block(n) for n in range(i, due + 1)))
            counts["events"] += due + 1 - i
            i = due + 1
            if rate <= 0:
                # Writes below the transport's high-water mark do not yield: let other streams run.
                await asyncio.sleep(0)

    async def stream(request, body):
        """Answers with an event stream whose events `body(resp)` writes; quiet when the client goes."""
        resp = web.StreamResponse(headers=SSE_HEADERS)
        await resp.prepare(request)
        counts["streams"] += 1
        try:
            await body(resp)
            await resp.write_eof()
        except ConnectionError:
            pass
        return resp

    async def events(request):
        first = 1
        last_id = request.headers.get("Last-Event-ID", "").strip()
        if last_id.isascii() and last_id.isdigit():
            first = int(last_id) + 1
        if count and first > count:
            return web.Response(status=204)

        async def body(resp):
            await resp.write(b"retry: 500\n\n")
            await send(resp, lambda n: b"id: %d\ndata: tick %d\n\n" % (n, n), first, count or None)

        return await stream(request, body)

    async def chat(request):
        try:
            req = await request.json()
        except (ValueError, UnicodeDecodeError):
            req = None
        if not isinstance(req, dict):
            error = {"message": "the body must be a JSON object", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=400)
        model = req.get("model") if isinstance(req.get("model"), str) else "strain-test"
        blocks = chat_events(model)

        async def body(resp):
            await send(resp, lambda n: blocks[n], 0, len(blocks) - 1)

        return await stream(request, body)

    app = web.Application()
    app.router.add_get("/events", events)
    app.router.add_post("/chat", chat)
    # Endless streams never finish on their own: on shutdown each gets a second to see
    # `stopping`, then aiohttp cancels it.
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, backlog=4096).start()
    stop = loop.create_future()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    print("ready", flush=True)
    await stop
    stopping.set()
    await runner.cleanup()
    print(f"streams {counts['streams']} events {counts['events']}", flush=True)


if __name__ == "__main__":
    main()
