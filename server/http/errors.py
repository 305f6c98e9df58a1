"""One error type and the problem+json bodies (RFC 9457) every error response uses."""

from __future__ import annotations

from http import HTTPStatus

import orjson
from aiohttp import web

PROBLEM_JSON = "application/problem+json"


class ApiError(Exception):
    """An error with a status, a user-safe detail and optional per-parameter errors."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        errors: list[dict] | None = None,
        headers: dict[str, str] | None = None,
        extra: dict | None = None,
    ):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.errors = errors
        self.headers = headers or {}
        self.extra = extra  # RFC 9457 extension members


def bad_request(parameter: str, message: str) -> ApiError:
    """A 400 about one parameter."""
    return ApiError(400, message, errors=[{"parameter": parameter, "message": message}])


def problem_response(
    status: int,
    detail: str,
    *,
    errors: list[dict] | None = None,
    headers: dict[str, str] | None = None,
    extra: dict | None = None,
) -> web.Response:
    """Build the problem+json response."""
    body = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if errors:
        body["errors"] = errors
    if extra:
        body.update({k: v for k, v in extra.items() if k not in body})
    return web.Response(
        status=status, body=orjson.dumps(body), content_type=PROBLEM_JSON, headers=headers
    )
