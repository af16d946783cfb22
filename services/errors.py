"""Why a service refused or could not finish a request, by kind; api/errors.py gives each kind its HTTP
status, so no service speaks HTTP."""

from __future__ import annotations

from contracts.failures import typed_message
from workflows.problems import Problem


class ServiceError(Exception):
    """A failure the caller can act on: `message` says what and, where it helps, what to do."""

    def __init__(
        self,
        message: str,
        retry_after: int | None = None,
        error_type: str | None = None,
        problems: list[Problem] | None = None,
    ):
        # A failure of a named kind (contracts/failures.py) says so first: `BudgetExceeded: ...`.
        self.message = typed_message(error_type, message) if error_type else message
        self.retry_after = retry_after  # seconds, for refusals that pass with time
        self.error_type = error_type  # the error answer's `type`
        self.problems = problems or []  # what in the request is wrong, each at its path
        super().__init__(self.message)


class NotFound(ServiceError):
    """The caller has no such resource (or it is another developer's); `hint` says where to find one."""

    def __init__(self, kind: str, id_: str, hint: str | None = None):
        super().__init__(f"{kind} {id_} not found" + (f": {hint}" if hint else ""))


class Invalid(ServiceError):
    """The request cannot be carried out as asked (a 422)."""


class Refused(ServiceError):
    """A rule the developer set refused the request or what the model did (a guardrail trip, a handoff
    outside the agent's list): a 400, with the rule's message."""


class TooLarge(ServiceError):
    """What the request needs does not fit its limit (a session's context in its token budget)."""


class Busy(ServiceError):
    """Other work holds what the request needs; trying again later may work."""


class WrongState(ServiceError):
    """The resource is not in a state that allows the request (an execution that already ended, a key
    used before with another input)."""


class Unavailable(ServiceError):
    """A service Mint relies on (Temporal) could not be reached or refused: trying again later may work."""


class TooMany(ServiceError):
    """The developer is over a limit on work at once; `retry_after` says when to try again."""


class ModelRefused(ServiceError):
    """The model provider refused the request as asked (bad settings, say): the caller's to fix."""


class ModelFailed(ServiceError):
    """The model was unavailable, or its answer unusable: not the caller's fault."""


class OutOfBudget(ServiceError):
    """The budget (the session's, or the developer's default) allows no more model calls (a 402)."""

    def __init__(self, message: str):
        super().__init__(message, error_type="BudgetExceeded")
