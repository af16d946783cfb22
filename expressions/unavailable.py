"""Names Julep v1 offered in expressions that Mint refuses, each with the reason, said when a task is created."""

from __future__ import annotations

_NO_BOUND = "whose worst case on hostile text the sandbox's work budget cannot bound"
_STRPTIME = (
    "strptime compiles a regular expression per format into a cache the whole worker shares, so its cost "
    "cannot be charged the same way on every replay; use datetime.datetime.fromisoformat, or re"
)

# By the name (or dotted path) an expression writes.
UNAVAILABLE = {
    "nlp": "Julep's spaCy pipeline needs a language model the sandbox cannot load, and gives spaCy objects, "
    "which are not data; chunk_doc splits text into sentences, and a tool can run spaCy",
    "humanize_text_alpha": "it calls language models and translation services, and an expression does no I/O "
    "(Julep marked it temporary); use a prompt step",
    "markdown_to_html": f"Julep ran markdown2, a large converter {_NO_BOUND}; convert in a tool step",
    "html_to_markdown": f"Julep ran markdownify, a large converter {_NO_BOUND}; convert in a tool step",
    "csv.register_dialect": "dialects are registered for the whole worker (every execution), and not replayed; "
    "pass delimiter=, quotechar= and the like instead",
    "csv.unregister_dialect": "dialects are registered for the whole worker (every execution), and not replayed",
    "csv.Sniffer": f"it guesses with backtracking regular expressions {_NO_BOUND}; pass the delimiter",
    "csv.Dialect": "it is a class to subclass, and expressions cannot define classes; pass the options",
    "csv.Error": "it is an exception class, and expressions cannot catch exceptions",
    "time.strptime": _STRPTIME,
    "datetime.datetime.strptime": _STRPTIME,
    "datetime.datetime.datetime.strptime": _STRPTIME,
}


def unavailable(name: str) -> str | None:
    """Why `name` (a Julep function or module member) is refused, as a sentence, or None if it is not one."""
    why = UNAVAILABLE.get(name)
    return None if why is None else f"{name} (from Julep v1) is not available in Mint: {why}"
