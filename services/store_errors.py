"""The store's and the database driver's failures, as service errors: a write that collides (Conflict), a
database that is busy or out of reach, or refuses a value, and secrets that cannot be opened. Any use case
can meet them, so they are translated in one place, and api/errors.py maps only service errors."""

from __future__ import annotations

from collections.abc import Callable

from infra.store.db import DatabaseBusy
from infra.store.db_errors import LOCKED, PERMANENT, UNREACHABLE, explain
from infra.store.rows import Conflict as StoreConflict
from infra.store.secrets import SecretsUnavailable
from services.errors import Invalid, ServiceError, Unavailable


class Conflict(ServiceError):
    """A write collided with what exists: a taken id, a name that must be unique, a duplicate (a 409)."""


# An Unavailable with `retry_after` is a database that will be back: nothing is lost and the caller should
# retry. Without it, only the operator can fix what is missing (the secrets key, say).


def _busy(exc: Exception) -> ServiceError:
    # Every connection is in use, or a row stayed locked: nothing is lost, the client should retry.
    message = str(exc) if isinstance(exc, DatabaseBusy) else "a row stayed locked by other work"
    return Unavailable(f"the database is busy right now, retry shortly: {message}", retry_after=1)


def _down(exc: Exception) -> ServiceError:
    # Postgres is restarting or unreachable (or the socket is gone): nothing is lost, the client should retry.
    return Unavailable(
        f"the database is unavailable right now, retry shortly ({type(exc).__name__})", retry_after=2
    )


def _invalid_value(exc: Exception) -> ServiceError:
    # Postgres refused a value the request checks let through (a number out of range, say): the caller's
    # input. Said in words: the database's own message quotes SQL and its arguments.
    return Invalid(f"invalid value: a value in this request {explain(exc)}")


def _said(kind: Callable[[str], ServiceError]) -> Callable[[Exception], ServiceError]:
    return lambda exc: kind(str(exc))


# Each failure by its class; the first class in an exception's MRO that is listed says what it is.
_TRANSLATIONS: dict[type[Exception], Callable[[Exception], ServiceError]] = {
    StoreConflict: _said(Conflict),
    SecretsUnavailable: _said(Unavailable),
    DatabaseBusy: _busy,
    OSError: _down,  # the socket is gone
    **{kind: _invalid_value for kind in PERMANENT},  # a value refused: out of range, too large to index
    **{kind: _busy for kind in LOCKED},  # a row locked too long
    **{kind: _down for kind in UNREACHABLE},  # the database out of reach
}

STORE_FAILURES: tuple[type[Exception], ...] = tuple(_TRANSLATIONS)


def as_service_error(exc: Exception) -> ServiceError:
    """The service error a failure of one of STORE_FAILURES is."""
    for kind in type(exc).__mro__:
        if kind in _TRANSLATIONS:
            return _TRANSLATIONS[kind](exc)
    raise TypeError(f"{type(exc).__name__} is no store failure") from exc
