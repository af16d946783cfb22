"""Which failures are retried, decided in one place.

Temporal retries an activity by the step's retry policy unless the error is permanent. Permanent: the
request itself is wrong or forbidden (retrying cannot help). Transient: the network, timeouts, HTTP 429 and
5xx. Other HTTP statuses are not errors at all: the response goes back to the task as data.

Both are failures Mint expects (the message says what happened; a traceback would add nothing), so both are
BENIGN: the worker logs each in one line (activities/observe.py), and the Temporal SDK logs them only at
DEBUG and leaves them out of its failure metrics, which then count only the unexpected.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

EXPECTED = ApplicationErrorCategory.BENIGN


def permanent(message: str, kind: str) -> ApplicationError:
    return ApplicationError(message, type=kind, non_retryable=True, category=EXPECTED)


def transient(message: str, kind: str) -> ApplicationError:
    return ApplicationError(message, type=kind, category=EXPECTED)


def for_http_status(url: str, status: int) -> ApplicationError | None:
    """The error an HTTP status means, or None when the response is an answer the task should see."""
    if status == 429 or status >= 500:
        return transient(f"{url} answered {status}", "HttpUnavailable")
    return None
