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
KNOWN_PATHS: set[tuple[str, str]] = {
    ("activities/sessions.py", "infra/store/session_history"),
    ("contracts/__init__.py", "mint/"),
    ("contracts/transitions.py", "infra/store.py"),
    ("infra/models/client.py", "mint/"),
    ("services/chat/chatter.py", "mint/chat_turns.py"),
    ("services/chat/slots.py", "mint/chat_turns.py"),
    ("tests/test_julep_spec.py", "docs/bulk_delete_docs.py"),
    ("tests/unit/test_language.py", "workflows/language.py"),
    ("tests/unit/test_transition_log.py", "workflows/transitions.py"),
    ("workflows/interpreter.py", "sandbox/budget.py"),
}
KNOWN_ISSUES: set[tuple[str, str]] = {
    ("bench/peers.py", "issue 15"),
    ("contracts/budgets.py", "issue 17"),
    ("contracts/executions.py", "issue 13"),
    ("services/handoffs.py", "issue 17"),
    ("tests/record_histories.py", "issue 13"),
    ("tests/record_histories.py", "issue 17"),
    ("tests/record_histories.py", "issue 18"),
    ("tests/test_adaptive_context.py", "issue 29"),
    ("tests/test_budgets.py", "issue 17"),
    ("tests/test_budgets.py", "issue 27"),
    ("tests/test_compose.py", "Issue 27"),
    ("tests/test_deploy.py", "Issue 27"),
    ("tests/test_dialect.py", "Issue 13"),
    ("tests/test_egress.py", "issue 27"),
    ("tests/test_embedding_sizes.py", "issue 28"),
    ("tests/test_error_types.py", "issue 29"),
    ("tests/test_expression_costs.py", "issue 13"),
    ("tests/test_expression_library.py", "issue 13"),
    ("tests/test_files_projects.py", "issue 28"),
    ("tests/test_fstrings.py", "issue 13"),
    ("tests/test_guardrails.py", "issue 17"),
    ("tests/test_handoffs.py", "issue 17"),
    ("tests/test_integrations.py", "issue 27"),
    ("tests/test_integrations_more.py", "issue 28"),
    ("tests/test_julep_api.py", "issue 28"),
    ("tests/test_julep_corpus.py", "Issue 13"),
    ("tests/test_julep_corpus.py", "issue 13"),
    ("tests/test_julep_spec.py", "issue 28"),
    ("tests/test_loops.py", "issue 13"),
    ("tests/test_metrics.py", "Issue 27"),
    ("tests/test_mint_up.py", "Issue 27"),
    ("tests/test_mint_up.py", "issue 16"),
    ("tests/test_overrun.py", "issue 12"),
    ("tests/test_quiet_bugs.py", "issue 29"),
    ("tests/test_reduce.py", "issue 13"),
    ("tests/test_references.py", "issue 17"),
    ("tests/test_replay.py", "issue 17"),
    ("tests/test_replay.py", "issue 18"),
    ("tests/test_replay.py", "issue 19"),
    ("tests/test_restart.py", "issue 17"),
    ("tests/test_sandbox.py", "issue 12"),
    ("tests/test_sandbox.py", "issue 13"),
    ("tests/test_settings.py", "issue 27"),
    ("tests/test_steps.py", "Issue 13"),
    ("tests/test_steps.py", "issue 13"),
    ("tests/test_system_tools.py", "issue 13"),
    ("tests/test_traces.py", "issue 17"),
    ("tests/unit/test_references.py", "issue 27"),
    ("workflows/handoffs.py", "issue 17"),
    ("workflows/interpreter.py", "issue 13"),
    ("workflows/reference_size.py", "issue 27"),
    ("workflows/references.py", "issue 17"),
    ("workflows/step_runner.py", "issue 13"),
}


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
