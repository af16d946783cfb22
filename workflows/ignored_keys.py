"""Keys a task or tool may carry that Mint does not use: ignored with a warning, as Julep v1 ignored them, or
refused where ignoring one would hide a mistake or change what runs (a key close to one the step or the
api_call has is taken for a typo of it, and refused naming it).

Julep's models took unknown keys and dropped them, and its cookbooks rely on it: a step-level
`response_format` beside a prompt, header-like keys (`x-return-format`, `Authorization`) beside an
`api_call`'s fields. The models here set such keys aside (language._Lenient); this module says, with the
path, what happened to each.
"""

from __future__ import annotations

from workflows import language as lang
from workflows.problems import Problem, Suggestions

SHOWN_KEY_LENGTH = 80  # a key longer than this is quoted by its start in paths and messages


def _shown(key: str) -> str:
    return key if len(key) <= SHOWN_KEY_LENGTH else key[:SHOWN_KEY_LENGTH] + "..."


IGNORED = "ignored, as Julep v1 ignored it"
# Keys that make a step a different kind, or hold the steps of one: beside another kind they mean a missing
# `-` (two steps written as one), which would otherwise drop a step silently.
_STEP_SHAPES = frozenset(lang.STEP_KEYS) | {"then", "else", "do", "map", "parallel", "case", "in", "reduce"}
# Keys that bound or retry a step that calls out or waits: on another step they would promise a limit that
# never applies, so they are refused (Mint's own rule, stricter than Julep's).
_CALL_SETTINGS = frozenset({"timeout", "retry"})
# api_call fields Julep v1 had that Mint does not implement: ignoring one would change the request.
_UNIMPLEMENTED_API_CALL = {
    "secrets": "write secrets where they go, as `secrets.NAME` in the url, headers or body",
    "files": "send the file's content in `content` or `json`",
    "cookies": "send them as a `Cookie` header",
    "include_response_content": "the response's content is always included",
}


def step_keys(
    step: lang.StepModel, path: str, suggest: Suggestions | None = None
) -> tuple[list[Problem], list[Problem]]:
    """(problems, warnings) for the keys a step carried that its kind does not have; `suggest` is the
    document's budget for looking up the key an unknown one is a typo of."""
    kind, suggest = lang.step_kind(step), suggest or Suggestions()
    problems, warnings = [], []
    for key in map(_shown, step.ignored_keys):
        where = f"{path}.{key}"
        if key in _STEP_SHAPES:
            problems.append(
                Problem(
                    where,
                    f"`{key}` does not belong in {_a(kind)} step: each step has one kind (is a `-` missing "
                    "before it, starting a new step?)",
                )
            )
        elif key in _CALL_SETTINGS:
            problems.append(
                Problem(
                    where,
                    f"`{key}` applies only to steps that call out (tool, prompt, search) or wait "
                    f"(wait_for_input: timeout); {_a(kind)} step runs at once",
                )
            )
        elif meant := suggest.closest(key, lang.model_keys(type(step))):
            # Most likely a typo: ignoring it would drop what the key was meant to say.
            problems.append(
                Problem(where, f"unknown key `{key}` in {_a(kind)} step: did you mean `{meant}`?")
            )
        elif key == "response_format" and kind == "prompt":
            warnings.append(Problem(where, f"{IGNORED}: a prompt's `response_format` goes under `settings`"))
        else:
            warnings.append(Problem(where, f"{IGNORED}: `{kind}` steps have no `{key}`"))
    return problems, warnings


def api_call_keys(
    api_call: lang.ApiCallDef | None, path: str, suggest: Suggestions | None = None
) -> tuple[list[Problem], list[Problem]]:
    """(problems, warnings) for the keys beside an api_call's fields; `path` is the tool's."""
    if api_call is None:
        return [], []
    suggest = suggest or Suggestions()
    problems, warnings = [], []
    prefix = f"{path}.api_call" if path else "api_call"
    for key in map(_shown, api_call.ignored_keys):
        where = f"{prefix}.{key}"
        if key in _UNIMPLEMENTED_API_CALL:
            problems.append(
                Problem(where, f"Julep v1's `{key}` is not supported: {_UNIMPLEMENTED_API_CALL[key]}")
            )
        elif meant := suggest.closest(key, lang.model_keys(lang.ApiCallDef)):
            problems.append(Problem(where, f"unknown api_call key `{key}`: did you mean `{meant}`?"))
        else:
            warnings.append(
                Problem(
                    where,
                    f"{IGNORED}: `{key}` is not an api_call field, so it is not sent (headers go under `headers`)",
                )
            )
    return problems, warnings


def _a(kind: str | None) -> str:
    """`a `log``, `an `evaluate``: the kind in backticks with its article."""
    return f"{'an' if (kind or 'x')[0] in 'aeiou' else 'a'} `{kind}`"
