"""The API holds routes, schemas, auth and the mapping of errors to HTTP; the use cases are services/, and only
they talk to the store (docs/layout.md). Read from the import statements, function-level ones included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parent.parent

# Imports of the store from api/ that there are, each to go once its use case is a service (the list only
# shrinks: the test fails on a new one, and on one of these once it is gone).
KNOWN: set[tuple[str, str]] = set()


def _store_imports() -> set[tuple[str, str]]:
    found = set()
    for path in (ROOT / "api").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                ([node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names])
                if isinstance(node, ast.Import | ast.ImportFrom)
                else []
            )
            found |= {(str(path.relative_to(ROOT)), n) for n in names if n.startswith("infra.store")}
    return found


def test_the_api_imports_no_store() -> None:
    found = _store_imports()
    assert found - KNOWN == set(), "a route calls a service, which calls the store"
    assert KNOWN - found == set(), "gone: take these out of KNOWN"
