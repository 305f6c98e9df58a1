"""Log lines as text or as JSON with ECS field names, each tagged with the id of the request it
was written for (docs/operations/production.md#logs)."""

from __future__ import annotations

import logging

from server.observe.requests import CURRENT_REQUEST_ID

TEXT = "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"
# The same, with the request's id before the message (the pid stays the third word).
TEXT_IN_REQUEST = "%(asctime)s %(process)d %(name)s %(levelname)s [%(request_id)s] %(message)s"
ECS_VERSION = "8.11.0"
# LogRecord attributes -> ECS fields (the pipeline's JSON lines use the same names).
ECS_FIELDS = {
    "levelname": "log.level",
    "name": "log.logger",
    "process": "process.pid",
    "exc_info": "error.stack_trace",
    "request_id": "http.request.id",
}


class RequestIdFilter(logging.Filter):
    """Puts the current request's id (if any) on every record, as `request_id`."""

    def filter(self, record: logging.LogRecord) -> bool:
        rid = CURRENT_REQUEST_ID.get()
        if rid is not None:
            record.request_id = rid
        return True


class TextFormatter(logging.Formatter):
    """The text lines; those written for a request carry its id in brackets."""

    def __init__(self) -> None:
        super().__init__(TEXT)
        self._in_request = logging.PercentStyle(TEXT_IN_REQUEST)

    def formatMessage(self, record: logging.LogRecord) -> str:
        if getattr(record, "request_id", None) is None:
            return super().formatMessage(record)
        return self._in_request.format(record)


def json_formatter() -> logging.Formatter:
    """One JSON object a line: @timestamp, log.level, log.logger, process.pid, message,
    ecs.version, http.request.id in a request, error.stack_trace, and any `extra` fields."""
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(
        "{levelname}{name}{process}{message}",
        style="{",
        rename_fields=ECS_FIELDS,
        static_fields={"ecs.version": ECS_VERSION},
        timestamp="@timestamp",
    )


def handler(log_format: str) -> logging.Handler:
    """A stderr handler writing `log_format` ("text" or "json") lines."""
    out = logging.StreamHandler()
    out.setFormatter(json_formatter() if log_format == "json" else TextFormatter())
    out.addFilter(RequestIdFilter())
    return out
