"""Command line: serve the API, or manage keys.

    python -m server [--build DIR] [--host H] [--port P] [--keys-file F] [--workers N]
    python -m server keys add NAME --keys-file F [--rate-limit N]
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import signal
import socket
import sys
from pathlib import Path

from server.config import Config


def main(argv: list[str] | None = None) -> int:
    """Dispatch to `keys` or to serving."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["keys"]:
        return keys_command(argv[1:])
    return serve_command(argv)


def keys_command(argv: list[str]) -> int:
    """`keys add NAME --keys-file F [--rate-limit N]`: print the new key on the last line."""
    from server.keys import add_key

    parser = argparse.ArgumentParser(prog="python -m server keys")
    sub = parser.add_subparsers(dest="action", required=True)
    add = sub.add_parser("add", help="create a key; only its SHA-256 hash is stored")
    add.add_argument("name")
    add.add_argument("--keys-file", type=Path, required=True)
    add.add_argument("--rate-limit", type=int, default=None,
                     help="requests a minute for this key (default: the server's default)")
    args = parser.parse_args(argv)
    try:
        key = add_key(args.keys_file, args.name, args.rate_limit)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    limit = f"{args.rate_limit} requests a minute" if args.rate_limit else "the default rate limit"
    print(f"Created key {args.name!r} ({limit}); its hash is stored in {args.keys_file}.")
    print("Send it as the X-API-Key header or the api_key parameter. It is shown only once:")
    print(key)
    return 0


def serve_command(argv: list[str]) -> int:
    """Bind the port, then run one server process per worker on it."""
    parser = argparse.ArgumentParser(prog="python -m server")
    parser.add_argument("--build", type=Path, dest="build_dir", help="build directory (build/)")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int, help="port (0 picks a free one)")
    parser.add_argument("--keys-file", type=Path)
    parser.add_argument("--workers", type=int, help="processes sharing the port (SO_REUSEPORT)")
    args = parser.parse_args(argv)
    config = Config.from_env(**vars(args))
    _configure_logging()
    if config.workers < 1:
        parser.error("--workers must be at least 1")
    reserved = _bind(config.host, config.port)
    port = reserved.getsockname()[1]
    print(f"serving {config.build_dir}/current on http://{_url_host(config.host)}:{port} "
          f"with {config.workers} worker(s)", flush=True)
    if config.workers == 1:
        reserved.listen(1024)
        _run_worker(config, reserved)
        return 0
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_worker_main, args=(config, port), daemon=True)
               for _ in range(config.workers)]
    for process in workers:
        process.start()
    signal.signal(signal.SIGTERM, lambda *_: [p.terminate() for p in workers])
    try:
        for process in workers:
            process.join()
    except KeyboardInterrupt:
        for process in workers:
            process.terminate()
    return 0


def _configure_logging() -> None:
    logging.basicConfig(level=os.environ.get("WEATHERAPI_LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")
    # Per-request lines cost throughput; they name the key, never the key itself.
    access = os.environ.get("WEATHERAPI_ACCESS_LOG", "").lower() in {"1", "true", "yes"}
    logging.getLogger("server.access").setLevel(logging.INFO if access else logging.WARNING)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _worker_main(config: Config, port: int) -> None:
    """One worker process: its own SO_REUSEPORT socket on the shared port."""
    _configure_logging()
    sock = _bind(config.host, port)
    sock.listen(1024)
    _run_worker(config, sock)


def _run_worker(config: Config, sock: socket.socket) -> None:
    from aiohttp import web

    from server.app import create_app

    web.run_app(create_app(config), sock=sock, print=None, access_log=None,
                handle_signals=True, shutdown_timeout=10)


if __name__ == "__main__":
    sys.exit(main())
