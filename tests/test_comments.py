"""Comments say why, in the code's present: a path a comment or docstring names is one that exists (relative to
the repo root, like `infra/store/tables.py`), and none cites an issue number (the history is git's)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parent.parent
CHECKED = ("workflows", "activities", "api", "process", "services", "expressions", "infra", "contracts")
CHECKED += ("tests", "bench")
# A path: words joined by slashes, not inside a URL or another path, whose first folder is one of the repo's
# or one it had (the infrastructure was in `mint`, the expression sandbox in `sandbox` under workflows). Another project's
# files (Julep's, LangGraph's) are named from its own root, and not checked.
ROOTS = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")} | {"mint", "sandbox"}
PATH = re.compile(r"(?<![\w./:@$-])((?:[A-Za-z_][\w.*-]*/)+[\w.*-]*)")
ISSUE = re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+|\(#\d+\)|\bfixes #\d+", re.IGNORECASE)

# Comments that name a path that is gone, or cite an issue: each to go (the test fails on a new one, and on
# one of these once it is gone, so the lists only shrink). (file, what it names)
KNOWN_PATHS: set[tuple[str, str]] = set()
KNOWN_ISSUES: set[tuple[str, str]] = set()


def _files() -> list[Path]:
    return sorted(f for folder in CHECKED for f in (ROOT / folder).rglob("*.py"))


def _texts(path: Path) -> Iterator[str]:
    """The file's comments and docstrings."""
    source = path.read_text()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.string
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                yield docstring


def _named_paths(text: str) -> Iterator[str]:
    for match in PATH.finditer(text):
        path = match.group(1).rstrip(".")
        if path.split("/")[0] in ROOTS:
            yield path


def _exists(path: str) -> bool:
    if "*" in path:
        return any(ROOT.glob(path.rstrip("/")))
    return (ROOT / path).exists()


def _found(check: str) -> set[tuple[str, str]]:
    found = set()
    for path in _files():
        name = str(path.relative_to(ROOT))
        for text in _texts(path):
            if check == "paths":
                found |= {(name, p) for p in _named_paths(text) if not _exists(p)}
            else:
                found |= {(name, m.group(0)) for m in ISSUE.finditer(text)}
    return found


def test_paths_named_in_comments_exist() -> None:
    found = _found("paths")
    assert found - KNOWN_PATHS == set(), "name the path as it is now (relative to the repo root)"
    assert KNOWN_PATHS - found == set(), "fixed: take these out of KNOWN_PATHS"


def test_no_comment_cites_an_issue() -> None:
    found = _found("issues")
    assert found - KNOWN_ISSUES == set(), "say why in the comment itself: the history is git's"
    assert KNOWN_ISSUES - found == set(), "fixed: take these out of KNOWN_ISSUES"


def test_the_finders_find() -> None:
    text = "see mint/chat_turns.py and infra/store/, not https://x.org/infra/a.py or Julep's src/a.py"
    assert list(_named_paths(text)) == ["mint/chat_turns.py", "infra/store/"]
    assert not list(_named_paths("application/json, and/or input/output"))
    assert ISSUE.search("checked strictly (issue 14)") and ISSUE.search("see #12 (#30)")
