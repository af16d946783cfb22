"""Why Postgres (or asyncpg, encoding for it) refused a value, in words a user can act on.

Never the database's own text: it quotes SQL argument numbers ("query argument $4"), values and DETAIL lines.
"""

from __future__ import annotations

import asyncpg

NUL = "contains a NUL character (\\u0000), which cannot be stored"
SURROGATE = "contains a lone surrogate (\\ud800..\\udfff), which is not valid Unicode"

# SQLSTATEs of values the database refuses whatever the retry (classes 22, data exception; 54, limits).
_BY_SQLSTATE = {
    "22P05": NUL,  # untranslatable_character: \u0000 in jsonb
    "22021": NUL,  # character_not_in_repertoire: a NUL byte in text
    "22003": "is a number out of range",
    "22001": "is longer than its field allows",
    "22P02": "is not in the form its field expects",
    "54000": "is too large to store",
    "54001": "is nested too deeply to store",
}

# What a data error cannot be fixed by retrying: the value itself is wrong.
PERMANENT = (asyncpg.DataError, asyncpg.ProgramLimitExceededError)
# A row that stayed locked past lock_timeout (infra/store/db.py), and a database that cannot be reached now (it is
# restarting, shutting down, or the socket is gone): the API answers both with a retry, and names them
# from here so that it never imports the driver.
LOCKED = (asyncpg.exceptions.LockNotAvailableError,)
UNREACHABLE = (
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.InterfaceError,
)


def explain(exc: BaseException) -> str:
    """What is wrong with the value, as the end of "a value ..."."""
    # asyncpg's own encoding errors carry the Python exception as their cause.
    cause = exc.__cause__ if isinstance(exc, asyncpg.DataError) and exc.__cause__ else exc
    if isinstance(cause, UnicodeEncodeError):
        return SURROGATE
    if isinstance(cause, OverflowError):
        return "is a number out of range"
    if isinstance(cause, RecursionError):
        return "is nested too deeply to store"
    if isinstance(cause, ValueError) and "JSON compliant" in str(cause):
        return "is NaN or Infinity, which JSON cannot hold"
    if isinstance(exc, asyncpg.PostgresError):
        if exc.sqlstate == "22P02" and "surrogate" in (getattr(exc, "detail", None) or ""):
            return SURROGATE
        return _BY_SQLSTATE.get(exc.sqlstate or "", "cannot be stored")
    return "cannot be stored"
