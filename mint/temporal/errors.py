"""Which failures are retried, decided in one place.

Temporal retries an activity by the step's retry policy unless the error is permanent. Permanent: the
request itself is wrong or forbidden (retrying cannot help). Transient: the network, timeouts, HTTP 429 and
5xx. Other HTTP statuses are not errors at all: the response goes back to the task as data.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError


def permanent(message: str, kind: str) -> ApplicationError:
    return ApplicationError(message, type=kind, non_retryable=True)


def transient(message: str, kind: str) -> ApplicationError:
    return ApplicationError(message, type=kind)


def for_http_status(url: str, status: int) -> ApplicationError | None:
    """The error an HTTP status means, or None when the response is an answer the task should see."""
    if status == 429 or status >= 500:
        return transient(f"{url} answered {status}", "HttpUnavailable")
    return None
