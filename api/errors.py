"""API errors: one exception type, mapped to JSON in one place."""

from __future__ import annotations

from typing import TypedDict

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.schemas import ErrorOut
from services import errors as service
from services.store_errors import STORE_FAILURES, Conflict, as_service_error
from workflows.plain_errors import plain_problems
from workflows.problems import Problem
from workflows.storable import format_path, json_depth_loc, too_deep

# Declared on every router: the JSON every 4xx carries (the handlers below), instead of FastAPI's default
# 422 `HTTPValidationError`, which this app never sends.
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    "4XX": {"model": ErrorOut, "description": "Bad input, unknown id, conflict or limit: see `error`"}
}


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        problems: list[Problem] | None = None,
        headers: dict[str, str] | None = None,
    ):
        self.status = status
        self.message = message
        self.problems = problems or []
        self.headers = headers or {}
        super().__init__(message)


# The HTTP status of each kind of service failure (services/errors.py).
SERVICE_STATUS: dict[type[service.ServiceError], int] = {
    service.NotFound: 404,
    service.Invalid: 422,
    service.Refused: 400,
    service.TooLarge: 413,
    service.Busy: 409,
    service.WrongState: 409,
    service.Unavailable: 503,
    service.TooMany: 429,
    service.ModelRefused: 400,
    service.ModelFailed: 502,
    service.OutOfBudget: 402,  # spent: trying again will not help, a bigger budget will
    Conflict: 409,  # the store's (services/store_errors.py)
    service.ServiceError: 500,  # a kind not listed above: listed kinds come first, so this is the last resort
}


class _Detail(TypedDict):
    loc: str
    msg: str
    type: str


class _Error(TypedDict, total=False):
    message: str
    code: str
    type: str
    details: list[_Detail]


class _Body(TypedDict):
    error: _Error
    detail: str


def _body(status: int, message: str, problems: list[Problem], error_type: str | None) -> _Body:
    """Julep's error shape (`{"error": {"message", "code", "type", "details"}}`), so that clients written
    for Julep read Mint's errors; the problems, each with its path, are the details."""
    error: _Error = {
        "message": message,
        "code": "validation_error" if status == 422 else f"http_{status}",
        # A failure of a named kind (contracts/failures.py), else what Julep calls an HTTP error.
        "type": error_type or "http_error",
    }
    if problems or status == 422:
        error["details"] = [{"loc": p.path, "msg": p.message, "type": "validation_error"} for p in problems]
    return {"error": error, "detail": message}


def _response(
    status: int, message: str, problems: list[Problem] | None = None, error_type: str | None = None
) -> JSONResponse:
    # The julep SDK retries 409s and 5xx unless told not to; our errors are final.
    return JSONResponse(
        _body(status, message, problems or [], error_type),
        status_code=status,
        headers={"x-should-retry": "false"},
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        response = _response(exc.status, exc.message, exc.problems)
        response.headers.update(exc.headers)
        return response

    @app.exception_handler(service.ServiceError)
    async def service_error(_: Request, exc: service.ServiceError) -> JSONResponse:
        return _service_response(exc)

    async def store_failure(_: Request, exc: Exception) -> JSONResponse:
        return _service_response(as_service_error(exc))

    for kind in STORE_FAILURES:  # the store's failures and the driver's, translated by the services
        app.add_exception_handler(kind, store_failure)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = plain_problems(exc.errors())
        summary = "; ".join(f"{p.path}: {p.message}" for p in problems[:5])
        return _response(422, f"invalid request: {summary}", problems)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc.__cause__, RecursionError):  # FastAPI could not parse a body nested that deep
            return await _too_deep(request)
        return _response(exc.status_code, str(exc.detail))


def _service_response(exc: service.ServiceError) -> JSONResponse:
    status = next(code for kind, code in SERVICE_STATUS.items() if isinstance(exc, kind))
    response = _response(status, exc.message, exc.problems, exc.error_type)
    if exc.retry_after is not None:
        response.headers["Retry-After"] = str(exc.retry_after)
        if isinstance(exc, service.Unavailable):  # it will be back: the client should retry after all
            del response.headers["x-should-retry"]
    return response


async def _too_deep(request: Request) -> JSONResponse:
    """A 422 naming where a JSON body nests past the limit (the body is cached on the request FastAPI read)."""
    found = too_deep(("body", *(json_depth_loc(await request.body()) or ())))
    path = format_path(found.loc)
    return _response(422, f"invalid request: {path}: {found.message}", [Problem(path, found.message)])
