"""The pipeline's log lines on stderr: text (the default), or one JSON object a line with the
ECS field names the server's JSON lines use (docs/operations/production.md#logs)."""

from __future__ import annotations

import logging
import sys

ENV = "WEATHERAPI_LOG_FORMAT"
FORMATS = ("text", "json")
ECS_VERSION = "8.11.0"
# As server/observe/logs.py: the pipeline imports nothing of the server's (architecture.md).
ECS_FIELDS = {
    "levelname": "log.level",
    "name": "log.logger",
    "process": "process.pid",
    "exc_info": "error.stack_trace",
}


def configure(log_format: str) -> None:
    """Log INFO and above to stderr in `log_format` ("text" or "json")."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        from pythonjsonlogger.json import JsonFormatter

        handler.setFormatter(
            JsonFormatter(
                "{levelname}{name}{process}{message}",
                style="{",
                rename_fields=ECS_FIELDS,
                static_fields={"ecs.version": ECS_VERSION},
                timestamp="@timestamp",
            )
        )
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
        )
    logging.basicConfig(level=logging.INFO, handlers=[handler])
