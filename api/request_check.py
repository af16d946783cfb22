"""One check of every request's values: text Postgres can store, data nested within the limit.

`check_request` is an app-wide dependency (api/app.py): it runs after FastAPI parsed a JSON body and before
any route code, so no route can forget it, and a bad value is a 422 naming its field rather than a database
error (or a row that breaks later). Routes that read their own body (tasks) check it with `reject_unstorable`.
"""

from __future__ import annotations

import re

from fastapi import Request

from api.errors import ApiError
from expressions.data import MAX_DEPTH
from workflows.problems import Problem
from workflows.storable import (
    Loc,
    Unstorable,
    find_unstorable,
    format_path,
    json_depth_loc,
    text_problem,
    too_deep,
)

# JSON can carry what cannot be stored only as an escape (\u0000, a surrogate escape that is not half of a
# pair), as the bytes of an encoded surrogate, or as NaN, Infinity or a number too large for a float (1e999):
# a body with none of them skips the walk over its strings. NUL bytes mean UTF-16 or UTF-32 text (json reads
# those too), which the rest cannot see into.
_HIGH = rb"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE_SURROGATE = rb"%s(?!%s)|(?<!%s)%s" % (_HIGH, _LOW, _HIGH, _LOW)
_SUSPECT = re.compile(
    rb"\\u0000|"
    + _LONE_SURROGATE
    + rb"|\xed[\xa0-\xbf]|[:,\[]\s*-?(?:NaN|Infinity)|[0-9][eE]\+?[0-9]{3}|\x00"
)


async def check_request(request: Request) -> None:
    """Refuse unstorable text in path and query parameters and in the JSON body, and bodies nested too deeply."""
    reject(_parameter_problems(request))
    if getattr(request.scope.get("route"), "body_field", None) is None:
        return  # the route reads its own body, and checks it
    body = await request.body()
    if not body:
        return
    try:
        value = await request.json()  # FastAPI parsed it already: this is its cached value
    except (ValueError, RecursionError):
        return  # not JSON: FastAPI passed the bytes on, and validation refuses them
    suspect = _SUSPECT.search(body) is not None
    if suspect or body.count(b"[") + body.count(b"{") > MAX_DEPTH:
        reject_unstorable(value, ("body",), scalars=suspect)


def _parameter_problems(request: Request) -> list[Unstorable]:
    found = []
    for place, items in (
        ("path", request.path_params.items()),
        ("query", request.query_params.multi_items()),
    ):
        for name, value in items:
            if problem := text_problem(name):
                found.append(Unstorable((place, name), "has a name that " + problem))
            elif problem := text_problem(value):
                found.append(Unstorable((place, name), problem))
    return found


def reject_unstorable(
    value: object, prefix: Loc = (), what: str = "invalid request", scalars: bool = True
) -> None:
    """Raise a 422 listing the problems in `value`, each at its path under `prefix`."""
    reject(find_unstorable(value, scalars=scalars), prefix, what)


def too_deep_error(text: str | bytes, prefix: Loc = (), what: str = "invalid request") -> ApiError:
    """For JSON text too deep for json.loads: a 422 at the first place it nests past the limit."""
    return problems_error([too_deep(json_depth_loc(text) or ())], prefix, what)


def reject(found: list[Unstorable], prefix: Loc = (), what: str = "invalid request") -> None:
    if found:
        raise problems_error(found, prefix, what)


def problems_error(found: list[Unstorable], prefix: Loc, what: str) -> ApiError:
    problems = [Problem(format_path(prefix + f.loc), f.message) for f in found]
    summary = "; ".join(f"{p.path}: {p.message}" for p in problems[:5])
    return ApiError(422, f"{what}: {summary}", problems)
