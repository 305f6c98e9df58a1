"""Serving processes: one, or N sharing the port through SO_REUSEPORT."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

from aiohttp.http_exceptions import HttpProcessingError

from server.config import Config

KEEPALIVE_TIMEOUT_S = 75.0  # aiohttp's web.run_app default
SHUTDOWN_TIMEOUT_S = 10.0
KILL_GRACE_S = 5.0  # after SHUTDOWN_TIMEOUT_S, a worker still running is killed


def configure_logging(log_format: str = "text") -> None:
    """Log to stderr as text or JSON; per-request lines only when WEATHERAPI_ACCESS_LOG is set."""
    from server.observe.logs import handler

    logging.basicConfig(
        level=os.environ.get("WEATHERAPI_LOG_LEVEL", "INFO"), handlers=[handler(log_format)]
    )
    # Per-request lines cost throughput; they name the key, never the key itself.
    access = os.environ.get("WEATHERAPI_ACCESS_LOG", "").lower() in {"1", "true", "yes"}
    logging.getLogger("server.access").setLevel(logging.INFO if access else logging.WARNING)
    # aiohttp logs requests its parser rejects with the raw bytes, which may hold a key.
    logging.getLogger("aiohttp.server").addFilter(_redact)


def _redact(record: logging.LogRecord) -> bool:
    """Keep the event, drop the request bytes: the message template with the client's address
    only, and the exception's type instead of its text and traceback. A request the parser
    rejects is the client's error: logged at DEBUG (anyone could fill the log at ERROR)."""
    template = str(record.msg).split("\n")[0][:120]
    if template.endswith(" from %s"):  # aiohttp's argument there is the client's address
        args = record.args if isinstance(record.args, tuple) else ()
        remote = args[0] if len(args) == 1 and isinstance(args[0], str) else "-"
        template = template[:-2] + remote[:64]
    kind = record.exc_info[0] if record.exc_info else None
    if kind is not None:
        if issubclass(kind, HttpProcessingError):
            if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
                return False
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        template = f"{template} ({kind.__name__})"
    record.msg, record.args, record.exc_info, record.exc_text = template, (), None, None
    return True


def serve(config: Config) -> int:
    """Bind the port (0 picks one), announce the URL on stdout, run the worker(s)."""
    reserved = _reserve(config.host, config.port, hold_only=config.workers > 1)
    # The metrics listener's port is held the same way; every worker listens on it itself.
    held = _reserve(*config.metrics_address, hold_only=True) if config.metrics_listen else None
    if reserved is None or (config.metrics_listen and held is None):
        return 2
    port = reserved.getsockname()[1]
    host = _bracketed(config.host)
    metrics = ""
    if held is not None:
        config = replace(
            config,
            metrics_listen=f"{_bracketed(config.metrics_address[0])}:{held.getsockname()[1]}",
        )
        metrics = f"; metrics on http://{config.metrics_listen}/metrics"
    elif config.metrics:
        metrics = f"; metrics on http://{host}:{port}/metrics"
    config = replace(config, event_loop=usable_event_loop(config.event_loop))
    print(
        f"serving {config.build_dir}/current on http://{host}:{port} "
        f"with {config.workers} worker(s) on {config.event_loop}{metrics}",
        flush=True,
    )
    with metrics_directory(config.metrics_enabled):
        if config.workers == 1:
            reserved.listen(1024)
            run_worker(config, reserved)
            return 0
        # The parent keeps its bound, non-listening socket only to hold the port number.
        return _supervise(replace(config, preload=True), port)


def _reserve(host: str, port: int, hold_only: bool) -> socket.socket | None:
    """A socket bound to host:port (0 picks a port), or None after saying why it cannot be."""
    try:
        if port:
            ensure_free(host, port)
        return bind(host, port, hold_only=hold_only)
    except OSError as exc:  # in use, not ours to bind (< 1024), no such address
        busy = " (is another server running there?)" if exc.errno == errno.EADDRINUSE else ""
        print(
            f"error: cannot serve on {_bracketed(host)}:{port}: {exc.strerror or exc}{busy}",
            file=sys.stderr,
        )
        return None


@contextlib.contextmanager
def metrics_directory(enabled: bool) -> Iterator[None]:
    """While metrics are on, a private directory (mode 0700) for prometheus_client's files of
    each worker, made for this start and removed after it: files left from another run would
    be summed into this one's counts."""
    if not enabled:
        yield
        return
    path = tempfile.mkdtemp(prefix="weatherapi-metrics-")
    # Read by prometheus_client when the workers (spawned: they inherit it) import it.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _supervise(config: Config, port: int) -> int:
    """Run the workers until a signal stops them (0), or until one exits on its own (1, the
    others stopped): a server quietly down to fewer workers, or to none while its parent
    lives on, would never be restarted by a supervisor."""
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=worker_main, args=(config, port), daemon=True)
        for _ in range(config.workers)
    ]
    for process in workers:
        process.start()
    failed = killed = False
    forgotten: set[int] = set()  # workers whose live metrics were removed
    deadline = math.inf  # set once stopping: a worker still running then is killed

    def stop(*_) -> None:
        nonlocal deadline
        # A signal sent again does not put the deadline off: stuck workers still get killed.
        deadline = min(deadline, time.monotonic() + SHUTDOWN_TIMEOUT_S + KILL_GRACE_S)
        for process in workers:
            process.terminate()

    # Both signals explicitly: a server started from a script in the background inherits
    # SIGINT ignored, and Python then raises no KeyboardInterrupt for it (it would not stop).
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    # A signal wakes the wait below through this pair, so its kill deadline counts from then.
    wakeup, wakeup_write = socket.socketpair()
    wakeup.setblocking(False)
    wakeup_write.setblocking(False)
    previous = signal.set_wakeup_fd(wakeup_write.fileno(), warn_on_full_buffer=False)
    try:
        while True:
            running = [p for p in workers if p.exitcode is None]
            # Checked on every turn, not only when a sentinel wakes us (a worker's exit may be
            # seen first while listing the running ones), and after the last one has ended.
            if config.metrics_enabled:
                _forget_ended(workers, forgotten)
            if deadline == math.inf and len(running) < len(workers):
                ended = next(p for p in workers if p.exitcode is not None)
                logging.getLogger("server").error(
                    "worker %d exited with status %s: stopping the server",
                    ended.pid,
                    ended.exitcode,
                )
                failed = True
                stop()
            if not running:
                break
            # Once killed, they end when the kernel lets them: waiting longer costs nothing.
            timeout = (
                None if deadline == math.inf or killed else max(0.0, deadline - time.monotonic())
            )
            if not _wait(running, wakeup, timeout):  # past their shutdown time: stuck
                for process in running:
                    process.kill()
                killed = True
    finally:
        signal.set_wakeup_fd(previous)
        wakeup.close()
        wakeup_write.close()
    return 1 if failed else 0


def _forget_ended(workers: list, forgotten: set[int]) -> None:
    """Remove the live gauges (weatherapi_workers) of workers that have ended; their counters
    stay, so that the totals a scrape sums never go down."""
    from prometheus_client import multiprocess

    for process in workers:
        if process.exitcode is not None and process.pid not in forgotten:
            multiprocess.mark_process_dead(process.pid)
            forgotten.add(process.pid)


def _wait(running: list, wakeup: socket.socket, timeout: float | None) -> bool:
    """Wait until a worker ends or a signal arrives (True), or the timeout passes (False)."""
    ready = multiprocessing.connection.wait([wakeup, *(p.sentinel for p in running)], timeout)
    if wakeup in ready:
        while True:
            try:
                wakeup.recv(512)
            except BlockingIOError:
                break
    for process in running:
        if process.sentinel in ready:
            # Its descriptors close a moment before it can be waited for: wait that moment.
            process.join()
    return bool(ready)


def _bracketed(host: str) -> str:
    """A host as it is written before :port in a URL ([::1] for an IPv6 address)."""
    return f"[{host}]" if ":" in host else host


def ensure_free(host: str, port: int) -> None:
    """Raise OSError when something listens on the port already: SO_REUSEPORT would let this
    server join it, and the two would split its connections (another build, other keys)."""
    # Only a socket without SO_REUSEPORT is refused a port that any socket listens on.
    with _tcp_socket(host) as probe:
        probe.bind((host, port))


def bind(host: str, port: int, hold_only: bool = False) -> socket.socket:
    """A TCP socket bound with SO_REUSEPORT, so sibling workers can bind the same port.
    `hold_only`: the parent's socket, never listening, that holds the port while the workers
    start; without SO_REUSEADDR, for a probe (which has it) may bind beside a bound socket
    that has it too and does not listen."""
    sock = _tcp_socket(host, reuse_address=not hold_only)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def _tcp_socket(host: str, reuse_address: bool = True) -> socket.socket:
    """A TCP socket for `host`, with SO_REUSEADDR unless told not to (with it, connections in
    TIME_WAIT hold no port)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    if reuse_address:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return sock


def worker_main(config: Config, port: int) -> None:
    """One worker process: its own SO_REUSEPORT socket on the shared port."""
    configure_logging(config.log_format)
    sock = bind(config.host, port)
    sock.listen(1024)
    # Readable once the parent is gone (killed, out of memory): a worker left behind would go
    # on holding the port, with no parent to stop it or to restart the server beside it.
    parent = multiprocessing.parent_process()
    run_worker(config, sock, parent.sentinel if parent else None)


def run_worker(config: Config, sock: socket.socket, parent_gone: int | None = None) -> None:
    """Run the aiohttp application on a listening socket until SIGTERM or SIGINT, or until
    the descriptor `parent_gone` becomes readable."""
    import pyarrow as pa

    from server.app import create_app

    # Arrow's default allocator (mimalloc) keeps the pages a request's temporaries freed for
    # reuse; glibc's gives them back, so a worker's resident memory stays some 20 MiB lower
    # after load. No request allocates enough through Arrow for the allocator to matter.
    pa.set_memory_pool(pa.system_memory_pool())
    with asyncio.Runner(loop_factory=loop_factory(config.event_loop)) as runner:
        runner.run(_serve(create_app(config), sock, parent_gone))


def usable_event_loop(wanted: str) -> str:
    """The event loop to run: uvloop when asked for and installed, else asyncio's own (with a
    warning: uvloop is a dependency, so its absence means an unusual install)."""
    if wanted != "uvloop":
        return wanted
    try:
        import uvloop  # noqa: F401
    except ImportError:
        logging.getLogger("server").warning(
            "uvloop is not installed: running on asyncio's own event loop "
            "(WEATHERAPI_EVENT_LOOP=asyncio says so without this warning)"
        )
        return "asyncio"
    return wanted


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """asyncio.Runner's loop_factory for the event loop `name` (None: asyncio's own)."""
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return None


async def _serve(app, sock: socket.socket, parent_gone: int | None = None) -> None:
    """web.run_app's serving loop, with ProblemRequestHandler as the connection protocol, so
    that requests aiohttp's parser rejects also get a problem+json answer."""
    from aiohttp import web

    from server.http.protocol import ProblemRequestHandler

    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
    await runner.setup()
    loop = asyncio.get_running_loop()
    manager = runner.server
    listener = await loop.create_server(
        lambda: ProblemRequestHandler(
            manager, loop=loop, access_log=None, keepalive_timeout=KEEPALIVE_TIMEOUT_S
        ),
        sock=sock,
    )
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    if parent_gone is not None:
        loop.add_reader(parent_gone, stop.set)
    try:
        await stop.wait()
    finally:
        listener.close()
        await runner.cleanup()  # lets requests in flight finish, then closes the application
