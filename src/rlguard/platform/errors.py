"""The API's errors: always a 4xx JSON body in OpenAI's shape, naming the field and the value.

`{"error": {"message": ..., "type": ..., "param": ..., "code": ...}}`. Validation errors name
the first bad field (`gpus`, `config.tasks.0.k`) and the value given; nothing is written to the
store before a request has passed validation, so a refused request leaves it unchanged.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rlguard.errors import shown

MAX_BODY_BYTES = 1 << 20


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        code: str,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param
        self.headers = headers  # e.g. a 429's Retry-After


def error_body(
    status: int,
    message: str,
    code: str,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": param, "code": code}},
        status_code=status,
        headers=headers,
    )


async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_body(exc.status, exc.message, exc.code, exc.param, exc.headers)


async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    where = loc[0] if loc else "body"
    param = ".".join(loc[1:]) or where
    if err["type"] == "json_invalid":
        return error_body(400, f"the request body is not valid JSON ({err['msg']})", "invalid_json")
    message = err["msg"].removeprefix("Value error, ")
    got = "" if err["type"] == "missing" else f" (got {shown(err.get('input'))})"
    return error_body(422, f"{param}: {message}{got}", "invalid_value", param)


async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:  # FastAPI's answer to a body json.loads could not read at all
        return error_body(400, f"the request body is not valid JSON ({exc.detail})", "invalid_json")
    codes = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}
    return error_body(exc.status_code, str(exc.detail), codes.get(exc.status_code, "http_error"))


async def on_unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    """A bug, still answered in the API's shape (and logged by the server)."""
    return error_body(500, f"internal error ({type(exc).__name__})", "internal_error")


class BodyLimit:
    """Refuse bodies over `limit` bytes with a 413, whether or not Content-Length says so
    (a chunked upload is counted as it arrives); `routes`: paths with a limit of their own (an
    upload). Not FastAPI's own `max_body_size` (0.165): it answers a too-large Content-Length
    in plain text, not in the API's JSON error shape."""

    def __init__(
        self, app: ASGIApp, limit: int = MAX_BODY_BYTES, routes: dict[str, int] | None = None
    ) -> None:
        self.app, self.default, self.routes = app, limit, routes or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.routes.get(scope["path"], self.default)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                raise _TooLarge(limit)
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._refuse(scope, receive, send, limit)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        response = error_body(413, f"the request body exceeds {limit} bytes", "request_too_large")
        await response(scope, receive, send)


class _TooLarge(StarletteHTTPException):
    """Raised while the body is read: FastAPI passes HTTP exceptions through its body parsing
    (any other one it would turn into a 400)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body exceeds {limit} bytes")


def store_unavailable(error: Exception) -> ApiError:
    """503 when the artifact store cannot be reached: a job's client retries its report (and
    nothing is recorded meanwhile), a tenant tries again later."""
    return ApiError(503, f"the artifact store is unavailable: {error}", "store_unavailable")
