"""The bench's reference: a bare aiohttp application answering a small JSON body on every GET.

    python -m bench.bare_app [--host H] [--loop uvloop|asyncio]

It prints "serving bare aiohttp on http://H:PORT" (port 0: a free one), then serves until
SIGTERM or SIGINT. No middleware, no headers of its own: the limit the framework sets.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from aiohttp import web

BODY = b'{"status":"ok"}'


async def answer(request: web.Request) -> web.Response:
    """Every path: the small JSON body /health answers."""
    return web.Response(body=BODY, content_type="application/json")


async def serve(host: str) -> None:
    """Serve on host, a free port, until SIGTERM or SIGINT."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, 0, backlog=1024)
    await site.start()
    port = runner.addresses[0][1]
    print(f"serving bare aiohttp on http://{host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    """Parse the flags and serve on the chosen event loop."""
    parser = argparse.ArgumentParser(prog="python -m bench.bare_app")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="asyncio")
    args = parser.parse_args(argv)
    factory = None
    if args.loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(serve(args.host))
    return 0


if __name__ == "__main__":
    sys.exit(main())
