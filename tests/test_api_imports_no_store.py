"""The API holds routes, schemas, auth and the mapping of errors to HTTP; the use cases are services/, and only
they talk to the store (README, Layout). Read from the import statements, function-level ones included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parent.parent

# Imports of the store from api/ that there are, each to go once its use case is a service (the list only
# shrinks: the test fails on a new one, and on one of these once it is gone).
KNOWN = {
    ("api/deps.py", "infra.store.tables"),
    ("api/routes/agents.py", "infra.store.docs"),
    ("api/routes/agents.py", "infra.store.projects"),
    ("api/routes/agents.py", "infra.store.tables"),
    ("api/routes/codec.py", "infra.store.crypto"),
    ("api/routes/developer.py", "infra.store.budgets"),
    ("api/routes/developer.py", "infra.store.developer_settings"),
    ("api/routes/secrets.py", "infra.store.secrets"),
    ("api/routes/secrets.py", "infra.store.tables"),
    ("api/routes/sessions.py", "infra.store.session_history"),
    ("api/routes/sessions.py", "infra.store.tables"),
    ("api/routes/users.py", "infra.store.docs"),
    ("api/routes/users.py", "infra.store.projects"),
    ("api/routes/users.py", "infra.store.tables"),
}


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
