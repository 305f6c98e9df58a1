"""The server's one frozen configuration, read from the environment and command line in one place."""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from urllib.parse import urlsplit

ENV_PREFIX = "WEATHERAPI_"
TRUE, FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}
SECRETS_FILE = "signing-secrets.json"
APP_DIR = "weather-geodata-api"
LOG_FORMATS = ("text", "json")
EVENT_LOOPS = ("uvloop", "asyncio")


def config_dir() -> Path:
    """The user's configuration directory for this service ($XDG_CONFIG_HOME or ~/.config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / APP_DIR


@dataclass(frozen=True)
class Config:
    """Everything the server needs to know; nothing is read at import time."""

    build_dir: Path = Path("build")
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    keys_file: Path | None = None
    # Token bucket: sustained requests a minute per key (or per client address), and burst.
    rate_limit_per_minute: int = 600
    rate_limit_burst: int = 0  # 0 means "same as the per-minute rate"
    # redis://host:port/db or unix:///path: one budget per client across workers and replicas.
    rate_limit_redis_url: str = ""
    reload_interval_s: float = 2.0  # how often to look for a newly published version
    # Follow builds published to object storage (s3://BUCKET/PREFIX) into build_dir, which is
    # then a cache of downloaded versions (docs/operations/scaling.md); polled this often.
    build_from: str = ""
    poll_interval_s: float = 10.0
    load_retry_s: float = 30.0  # how soon to load an area again after it failed to load
    base_url: str = ""  # public base URL; empty means the request's own origin
    trust_forwarded_for: bool = False  # use X-Forwarded-For as the client address (behind a proxy)
    # Webcam links. {cdn_url}: base of signed image URLs (default: this server's built-in image
    # host, {base}/cdn); {embed_base_url}: base of player.embed links (default: this server).
    cdn_url: str = ""
    embed_base_url: str = ""
    # Token and link signing: "kid:secret,kid:secret" (the first signs, all verify), else the
    # secrets file (default: signing-secrets.json beside the keys file, else in the user's
    # config directory; created once, mode 0600). Never beside the build: a build directory
    # such as /tmp/build would put the master secret in a shared directory.
    signing_secrets: str = field(default="", repr=False)
    signing_secrets_file: Path | None = None
    # Observability (docs/operations/production.md). Logs: "text" or "json" (ECS field names).
    log_format: str = "text"
    # Take X-Request-Id from the client: only behind a proxy that sets it on every request
    # (a client's own id could otherwise impersonate another request's in the logs).
    trust_request_id: bool = False
    # /metrics: off by default, so a public server does not publish it by accident. `metrics`
    # serves it on the API's listener; `metrics_listen` (HOST:PORT) on a listener of its own.
    metrics: bool = False
    metrics_listen: str = ""
    # uvloop (when installed; else asyncio's own, with a warning) or asyncio's own event loop.
    event_loop: str = "uvloop"
    # Load the build before accepting connections (set for --workers > 1, so that no worker
    # answers before its data is loaded; queued connections wait instead of failing).
    preload: bool = False

    @property
    def secrets_path(self) -> Path:
        """The signing secrets file in use when no secrets are given in the environment."""
        if self.signing_secrets_file:
            return self.signing_secrets_file
        if self.keys_file:
            return self.keys_file.resolve().parent / SECRETS_FILE
        return config_dir() / SECRETS_FILE

    @property
    def links_follow_host(self) -> bool:
        """True when signed webcam links (and the player's CSP) take their origin from each
        request's Host header: no base_url, and not both link bases configured."""
        return not self.base_url and not (self.cdn_url and self.embed_base_url)

    @property
    def legacy_secrets_path(self) -> Path | None:
        """Where older versions kept the secrets file by default (beside the build directory),
        unless a file is configured: a server upgraded from one may find its secrets there."""
        if self.signing_secrets_file:
            return None
        return self.build_dir.resolve().parent / SECRETS_FILE

    @property
    def metrics_enabled(self) -> bool:
        """True when /metrics is served on some listener."""
        return self.metrics or bool(self.metrics_listen)

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """(host, port) of the metrics listener of its own, or None."""
        return split_host_port(self.metrics_listen) if self.metrics_listen else None

    @property
    def burst(self) -> int:
        """Bucket capacity."""
        return self.rate_limit_burst or self.rate_limit_per_minute

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides) -> Config:
        """Defaults, then WEATHERAPI_* variables, then explicit overrides (e.g. CLI flags)."""
        env = os.environ if env is None else env
        values = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is not None:
                values[f.name] = _convert(f.name, raw, cls.__dataclass_fields__[f.name].default)
        config = cls(**values)
        return replace(config, **{k: v for k, v in overrides.items() if v is not None})

    def check(self) -> None:
        """Raise ValueError (one line naming the setting) for a value the server cannot run
        with: a zero rate would divide by zero on every request, a negative or NaN reload
        interval would spin a CPU, a port out of range would fail deep in bind()."""
        if not 0 <= self.port <= 65535:
            raise ValueError(_bad("port", "a port from 0 to 65535", self.port))
        if self.workers < 1:
            raise ValueError(_bad("workers", "at least 1", self.workers))
        if self.rate_limit_per_minute < 1:
            raise ValueError(
                _bad("rate_limit_per_minute", "at least 1", self.rate_limit_per_minute)
            )
        if self.rate_limit_burst < 0:
            raise ValueError(
                _bad("rate_limit_burst", "0 (the rate) or more", self.rate_limit_burst)
            )
        if not (math.isfinite(self.reload_interval_s) and self.reload_interval_s > 0):
            raise ValueError(
                _bad("reload_interval_s", "a number of seconds above 0", self.reload_interval_s)
            )
        if not (math.isfinite(self.load_retry_s) and self.load_retry_s >= 0):
            raise ValueError(
                _bad("load_retry_s", "a number of seconds, 0 or more", self.load_retry_s)
            )
        if self.build_from and (
            not self.build_from.startswith("s3://") or not self.build_from[5:].split("/")[0]
        ):
            raise ValueError(_bad("build_from", "an s3://BUCKET/PREFIX URL", self.build_from))
        if not (math.isfinite(self.poll_interval_s) and self.poll_interval_s > 0):
            raise ValueError(
                _bad("poll_interval_s", "a number of seconds above 0", self.poll_interval_s)
            )
        if self.log_format not in LOG_FORMATS:
            raise ValueError(_bad("log_format", " or ".join(LOG_FORMATS), self.log_format))
        if self.event_loop not in EVENT_LOOPS:
            raise ValueError(_bad("event_loop", " or ".join(EVENT_LOOPS), self.event_loop))
        if self.metrics_listen:
            self._check_metrics_listen()
        for name in ("base_url", "cdn_url", "embed_base_url"):
            url = getattr(self, name)
            if url and not _http_url(url):
                raise ValueError(_bad(name, "an http:// or https:// URL with a host", url))

    def _check_metrics_listen(self) -> None:
        """HOST:PORT (an IPv6 host in brackets), on another port than the API's."""
        try:
            host, port = split_host_port(self.metrics_listen)
        except ValueError:
            raise ValueError(
                _bad(
                    "metrics_listen",
                    "HOST:PORT (e.g. 127.0.0.1:9464 or [::1]:9464)",
                    self.metrics_listen,
                )
            ) from None
        if port and port == self.port and host == self.host:
            raise ValueError(
                _bad("metrics_listen", "another address than the API's", self.metrics_listen)
            )


def split_host_port(text: str) -> tuple[str, int]:
    """("host", port) of HOST:PORT or [IPv6]:PORT; ValueError when it is not one."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if (
        not sep
        or not host
        or not port.isdigit()
        or not 0 <= int(port) <= 65535
        or (":" in host and not text.startswith("["))
    ):
        raise ValueError(text)
    return host, int(port)


def check_log_level(env: Mapping[str, str] | None = None) -> None:
    """Raise ValueError for a WEATHERAPI_LOG_LEVEL that logging does not know."""
    level = (os.environ if env is None else env).get(ENV_PREFIX + "LOG_LEVEL", "INFO")
    if not isinstance(logging.getLevelName(level), int):
        raise ValueError(
            f"{ENV_PREFIX}LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {level!r}"
        )


def _bad(name: str, expected: str, value) -> str:
    flags = ("port", "workers", "build_from")
    flag = f" (or --{name.replace('_', '-')})" if name in flags else ""
    return f"{ENV_PREFIX}{name.upper()}{flag} must be {expected}, got {value!r}"


def _http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a malformed port or IPv6 address
        return False


def _convert(name: str, raw: str, default):
    try:
        if isinstance(default, bool):
            if raw.strip().lower() not in TRUE | FALSE:
                raise ValueError(raw)  # a typo must not silently mean "off"
            return raw.strip().lower() in TRUE
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, Path) or name.endswith("_file") or name.endswith("_dir"):
            return Path(raw) if raw else None
        return raw
    except ValueError:
        print(f"error: invalid {ENV_PREFIX}{name.upper()}={raw!r}", file=sys.stderr)
        raise SystemExit(2) from None
