"""The server's CPU time per request without sockets: raw HTTP requests fed to its own connection
protocol over a stand-in transport, 32 at a time (as wrk's connections keep them coming).

    python -m bench.inprocess_http [--build-dir build] [--workloads health lookup_id ...]
                                   [--requests 4000] [--rounds 7] [--bare]

Each workload of `just bench` (by name; `health` is /health) is answered `--rounds` times
`--requests` requests after a warm-up; the median round's CPU µs per request is printed, with
the bare aiohttp app's (--bare) for scale. Over HTTP the same work costs about twice as much
(docs/benchmarks.md#issue-27-limits); this isolates what the server itself does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from bench.harness import RATE_LIMIT
from bench.run import AREAS, HEALTH, make_context
from bench.run import parse_args as bench_args

BATCH = 32  # requests in flight, as wrk's 32 connections


class Transport(asyncio.Transport):
    """Counts the answers the protocol writes; wakes the waiter at the wanted count."""

    def __init__(self) -> None:
        super().__init__()
        self.answers, self.bytes, self.want = 0, 0, 0
        self.waiter: asyncio.Future | None = None

    def _wrote(self, data: bytes) -> None:
        self.bytes += len(data)
        if data.startswith(b"HTTP/1.1 "):
            self.answers += 1
            if self.waiter and self.answers >= self.want and not self.waiter.done():
                self.waiter.set_result(None)

    def write(self, data) -> None:
        self._wrote(bytes(data))

    def writelines(self, lines) -> None:
        self._wrote(b"".join(bytes(line) for line in lines))

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name, default=None):
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 80)}.get(name, default)

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


async def measure(app: web.Application, protocol, paths: list[str], requests: int, rounds: int):
    """(median CPU µs per request, bytes per answer) of `paths` answered in turn."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        from server.http.middleware import STORE

        if STORE in app:  # the server's: wait for its build
            while not app[STORE].readiness()[0]:
                await asyncio.sleep(0.05)
        loop = asyncio.get_running_loop()
        handler = protocol(runner.server, loop=loop, access_log=None)
        transport = Transport()
        handler.connection_made(transport)
        raw = [f"GET {p} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode() for p in paths]

        async def batch(start: int) -> None:
            transport.want = transport.answers + BATCH
            transport.waiter = loop.create_future()
            for i in range(start, start + BATCH):
                handler.data_received(raw[i % len(raw)])
            await transport.waiter

        for start in range(0, 8 * BATCH, BATCH):  # warm-up
            await batch(start)
        cpu = []
        for _ in range(rounds):
            started = time.process_time()
            for start in range(0, requests, BATCH):
                await batch(start)
            cpu.append((time.process_time() - started) / (requests // BATCH * BATCH) * 1e6)
        return statistics.median(cpu), transport.bytes // transport.answers
    finally:
        await runner.cleanup()


def workloads(build_dir: Path, workdir: Path, names: list[str]) -> dict[str, list[str]]:
    """The paths of the named workloads of `just bench`, with a key valid on this server."""
    ctx = make_context(bench_args(["--skip-build", "--quick"]), build_dir, workdir)
    found = {"health": HEALTH.paths}
    for module in AREAS:
        found |= {w.name: w.paths for w in module.workloads(ctx)}
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"error: no workload {', '.join(missing)}; known: {', '.join(found)}")
    return {name: found[name] for name in names}


async def main(args: argparse.Namespace) -> None:
    """Measure the bare app (if asked), then each workload on the server."""
    from bench.bare_app import answer
    from server.app import create_app
    from server.config import Config
    from server.http.protocol import ProblemRequestHandler

    if args.bare:
        bare = web.Application()
        bare.router.add_get("/{tail:.*}", answer)
        us, size = await measure(bare, RequestHandler, ["/bare"], args.requests, args.rounds)
        print(f"{'bare aiohttp app':24s} {us:7.1f} µs/request  {size:7d} bytes/answer")
    with tempfile.TemporaryDirectory(prefix="bench-inprocess-") as scratch:
        paths = workloads(args.build_dir, Path(scratch), args.workloads)
        env = {
            **os.environ,
            "WEATHERAPI_RATE_LIMIT_PER_MINUTE": RATE_LIMIT,
            "WEATHERAPI_RATE_LIMIT_BURST": RATE_LIMIT,
            "WEATHERAPI_ACCESS_LOG": "0",
        }
        config = Config.from_env(
            env, build_dir=args.build_dir, keys_file=Path(scratch) / "keys.json"
        )
        for name, urls in paths.items():
            app = create_app(config)
            us, size = await measure(app, ProblemRequestHandler, urls, args.requests, args.rounds)
            print(f"{name:24s} {us:7.1f} µs/request  {size:7d} bytes/answer", flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.inprocess_http")
    parser.add_argument("--build-dir", type=Path, default=Path("build"))
    parser.add_argument("--workloads", nargs="+", default=["health", "lookup_id", "daily"])
    parser.add_argument("--requests", type=int, default=4000, help="per round (default 4000)")
    parser.add_argument("--rounds", type=int, default=7, help="the median is printed (7)")
    parser.add_argument("--bare", action="store_true", help="the bare aiohttp app first")
    return parser.parse_args(argv)


if __name__ == "__main__":
    import uvloop

    uvloop.run(main(parse_args(sys.argv[1:])))
