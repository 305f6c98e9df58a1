"""The HTTP connection protocol: aiohttp's, except that errors raised before a request reaches
the application (malformed request lines or headers, oversized fields) answer problem+json."""

from __future__ import annotations

from http import HTTPStatus

from aiohttp import web_protocol
from aiohttp.http_exceptions import BadHttpMessage, LineTooLong
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from server.http.errors import problem_response
from server.http.middleware import STATIC_HEADERS

# The parser's limits, apart by a byte so that its LineTooLong (one class for both, naming the
# limit it crossed) tells an overlong request line (414) from an overlong header (431).
MAX_LINE_BYTES = 8190  # the request target (the whole line in the pure-Python parser)
MAX_FIELD_BYTES = 8191  # one header field, name and value
TOO_MANY_HEADERS = "Too many headers received"  # aiohttp's BadHttpMessage for that
DETAILS = {
    400: "malformed HTTP request",
    413: "request too large",
    414: f"request target too long (at most {MAX_LINE_BYTES} bytes)",
    431: "request header fields too large",
    500: "internal error",
}


class ProblemRequestHandler(web_protocol.RequestHandler):
    """aiohttp's request handler with problem+json error bodies that never echo the request."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("max_line_size", MAX_LINE_BYTES)
        kwargs.setdefault("max_field_size", MAX_FIELD_BYTES)
        super().__init__(*args, **kwargs)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> StreamResponse:
        """Log as aiohttp does (through the redacting filter), answer problem+json, close."""
        status = oversized_status(exc, self.max_line_size) or status
        super().handle_error(request, status, exc, message)
        detail = DETAILS.get(status) or HTTPStatus(status).phrase.lower()
        response = problem_response(
            status, detail, headers={**STATIC_HEADERS, "Cache-Control": "no-store"}
        )
        response.force_close()
        return response


def oversized_status(exc: BaseException | None, max_line_size: int) -> int | None:
    """414 for a request line over its limit, 431 for a header (or too many), else None."""
    if isinstance(exc, LineTooLong):
        return 414 if exc.args[1] == max_line_size else 431
    if isinstance(exc, BadHttpMessage) and exc.message == TOO_MANY_HEADERS:
        return 431
    return None
