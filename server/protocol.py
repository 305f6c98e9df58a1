"""The HTTP connection protocol: aiohttp's, except that errors raised before a request reaches
the application (malformed request lines or headers, oversized fields) answer problem+json."""

from __future__ import annotations

from http import HTTPStatus

from aiohttp import web_protocol
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from server.errors import problem_response
from server.http import STATIC_HEADERS

DETAILS = {
    400: "malformed HTTP request",
    413: "request too large",
    431: "request header fields too large",
    500: "internal error",
}


class ProblemRequestHandler(web_protocol.RequestHandler):
    """aiohttp's request handler with problem+json error bodies that never echo the request."""

    def handle_error(self, request: BaseRequest, status: int = 500,
                     exc: BaseException | None = None, message: str | None = None
                     ) -> StreamResponse:
        """Log as aiohttp does (through the redacting filter), answer problem+json, close."""
        super().handle_error(request, status, exc, message)
        detail = DETAILS.get(status) or HTTPStatus(status).phrase.lower()
        response = problem_response(status, detail, headers={**STATIC_HEADERS,
                                                              "Cache-Control": "no-store"})
        response.force_close()
        return response
