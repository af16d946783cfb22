"""The exit codes of every `mint` command, each with one meaning (docs/cli.md lists them).

A command that follows an execution (`mint run`, `mint watch`, `mint restart`) ends with the execution's own
outcome; every command ends with ERROR when it could not do what was asked, and with USAGE when it was asked
wrongly (a flag or argument it does not take), so that a script can tell "the execution failed" from "the
command did": click's own codes (1 for an error, 2 for a usage error) would read as `failed` and `cancelled`.
"""

from __future__ import annotations

import traceback
from enum import IntEnum

import click


class ExitCode(IntEnum):
    OK = 0  # done; for a followed execution: it succeeded
    FAILED = 1  # the followed execution failed
    CANCELLED = 2  # the followed execution was cancelled
    ERROR = 3  # the command could not do its work: the API unreachable or answering an error, a busy port...
    USAGE = 4  # a flag or argument the command does not take, or a value it refuses
    INTERRUPTED = 130  # Ctrl-C (the shell's code for it): following stopped, the execution goes on


# A finished execution's status, as the exit code of the command that followed it.
OUTCOMES = {"succeeded": ExitCode.OK, "failed": ExitCode.FAILED, "cancelled": ExitCode.CANCELLED}


class MintGroup(click.Group):
    """click's command group, ending with ExitCode's codes: its errors with ERROR, its usage errors with USAGE
    (for the group's own flags, a command it does not have, or a command's flags and arguments), a Ctrl-C it
    did not expect with INTERRUPTED instead of click's "Aborted!", and an exception nothing caught (a
    traceback) with ERROR. The error is said as click says it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.ClickException as exc:
            raise _said(exc) from None

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            raise _said(exc) from None
        except KeyboardInterrupt:
            click.echo("", err=True)  # off the line of the ^C
            raise SystemExit(ExitCode.INTERRUPTED) from None
        except (click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            if isinstance(exc, BrokenPipeError):
                raise  # output piped into `head`: click quiets it
            # A bug: its traceback, and ERROR rather than Python's 1, which would read as `failed`.
            traceback.print_exc()
            raise SystemExit(ExitCode.ERROR) from None


def _said(exc: click.ClickException) -> SystemExit:
    exc.show()
    return SystemExit(ExitCode.USAGE if isinstance(exc, click.UsageError) else ExitCode.ERROR)
