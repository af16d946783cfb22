"""The store answers records, and only the store reads rows: a service or route reads attributes of a record
(contracts/records/), never a column of a row by its name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
STORE = ROOT / "infra" / "store"
PRODUCT = ("workflows", "activities", "api", "process", "services", "expressions", "infra", "contracts")
# What a store method's answer may not be: a row (a mapping of column names), however it is spelled.
ROW_SHAPES = re.compile(r"\b(dict|Dict|Mapping|MutableMapping|Row|Record|TypedDict|Any)\b")
# A map of names to values that is not a row: a developer's secrets by name, as an activity hands them on.
NOT_ROWS = {("SecretStore", "reveal")}


def _public_methods() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted(STORE.glob("*.py")):
        for cls in ast.parse(path.read_text(), str(path)).body:
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in cls.body:
                is_method = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                if is_method and not node.name.startswith("_") and node.returns is not None:
                    found.append((cls.name, node.name, ast.unparse(node.returns)))
    return found


def test_no_store_method_answers_a_row() -> None:
    rows = {
        f"{cls}.{name} -> {answer}"
        for cls, name, answer in _public_methods()
        if ROW_SHAPES.search(answer) and (cls, name) not in NOT_ROWS
    }
    assert rows == set(), "answer a record of contracts/records/ (read from the row in infra/store/)"


# What infra/store/rows.py holds besides rows and their column readers.
NOT_READERS = {"Conflict", "new_id", "hash_key"}


def test_only_the_store_reads_columns() -> None:
    """Rows and the column readers of infra/store/rows.py are the store's: outside it, nothing imports them."""
    readers = set()
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            if path.is_relative_to(STORE):
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and node.module == "infra.store.rows":
                    if {alias.name for alias in node.names} - NOT_READERS:
                        readers.add(str(path.relative_to(ROOT)))
                if isinstance(node, ast.ImportFrom) and node.module == "infra.store":
                    if any(alias.name == "rows" for alias in node.names):
                        readers.add(str(path.relative_to(ROOT)))
    assert readers == set(), "read the record's attributes; its reader lives in infra/store/"
