"""The code's rooms and what each may import (README.md and docs/layout.md, Layout): no import cycle, and no import that runs from a
lower layer up to a higher one. Read from the source's import statements (function-level ones included), so
the rule holds for what runs, not only for what is imported at the top of a file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGES = ("process", "api", "services", "activities", "workflows", "expressions", "infra", "contracts")
# What each layer may import, itself included, from the top down. `process` (the `mint` command, the
# composition root that assembles API and worker from the layers below, and what the worker runs) may import
# everything; `workflows` is pure (no I/O, run by Temporal's sandbox); `services` (the use cases: executions,
# docs, chat) sits between the API and the activities; `expressions` (the sandbox a task's expressions and
# templates run in) is self-contained; `infra` (the store, Temporal plumbing, model clients, settings) sits
# below the rest; `contracts` (names and payloads at the Temporal boundary, transition rules) is pure data at
# the bottom, shared by all.
MAY_IMPORT = {
    "contracts": {"contracts"},
    "infra": {"infra", "contracts"},
    "expressions": {"expressions"},
    "workflows": {"workflows", "expressions", "contracts"},
    "activities": {"activities", "workflows", "expressions", "infra", "contracts"},
    "services": {"services", "activities", "workflows", "expressions", "infra", "contracts"},
    "api": {"api", "services", "activities", "workflows", "expressions", "infra", "contracts"},
    "process": set(PACKAGES),
}
# `infra/` is folders that say what they hold; only settings sit loose in it.
LOOSE_IN_INFRA = {"infra.settings"}
# Imports that break the rule, each to go: the test fails on any other, and on one of these once it is gone
# (so the list only shrinks).
KNOWN: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    files = [f for package in PACKAGES for f in (ROOT / package).rglob("*.py")]
    modules = {}
    for path in files:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports() -> dict[str, set[str]]:
    """Each module's imports of the project's own modules."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from workflows import language` imports the module workflows.language.
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.add(target)
        graph[name] = found
    return graph


def _layer(module: str) -> str:
    return module.split(".")[0]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_cycle():
    assert _cycles(_imports()) == []


def test_the_cycle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_runs_up_a_layer():
    upward = {
        (module, target)
        for module, targets in _imports().items()
        for target in targets
        if _layer(target) not in MAY_IMPORT[_layer(module)]
    }
    assert upward - KNOWN == set(), "imports from a lower layer to a higher one (see docs/layout.md)"
    assert KNOWN - upward == set(), "gone: take these out of KNOWN"


def test_every_module_is_in_a_layer():
    assert {_layer(m) for m in _imports()} <= set(MAY_IMPORT)


def test_infra_holds_folders():
    loose = {m for m, path in _modules().items() if path.parent == ROOT / "infra" and path.stem != "__init__"}
    assert loose <= LOOSE_IN_INFRA, "put new modules of infra/ in the folder for what they do"


# What a module under api/ may not hold: SQL is the persistence layer's (infra/store/), which the API calls.
SQL_TEXT = re.compile(r"\b(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b", re.IGNORECASE)
DB_CALLS = frozenset(
    {"execute", "executemany", "fetch", "fetchrow", "fetchval", "acquire", "copy_records_to_table"}
)
DB_DRIVERS = frozenset({"asyncpg", "psycopg", "psycopg2", "sqlalchemy"})


def _database_use(source: str) -> list[str]:
    """What in this source talks to the database itself: SQL text, a driver import, a connection call."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_TEXT.search(node.value):
            found.append(f"line {node.lineno}: SQL text {node.value[:40]!r}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"line {node.lineno}: imports {n}" for n in names if n.split(".")[0] in DB_DRIVERS]
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DB_CALLS
        ):
            found.append(f"line {node.lineno}: calls .{node.func.attr}(")
    return found


def test_the_api_holds_no_sql():
    found = {
        str(path.relative_to(ROOT)): use
        for path in (ROOT / "api").rglob("*.py")
        if (use := _database_use(path.read_text()))
    }
    assert found == {}, "api/ calls the store (infra/store/), which holds the SQL"


def test_the_sql_finder_finds_some():
    source = """
import asyncpg
async def f(store):
    await store.pool.fetchval("SELECT count(*) FROM executions WHERE developer_id = $1", 1)
    await store.pool.execute("delete from entries where id = $1", 2)
"""
    assert len(_database_use(source)) == 5
    assert _database_use('ApiError(404, "agent not found"); router.delete("/sessions/{id}")') == []


def _layout_table(path: Path) -> dict[str, set[str]]:
    """A Layout table (README.md's, docs/layout.md's): each layer's folder and what it says the layer may
    import."""
    page = path.read_text()
    table = page[page.index("| layer | what it holds | may import |") :].split("\n\n")[0]
    rows = {}
    for line in table.splitlines()[2:]:
        folder, _, may = (cell.strip() for cell in line.strip("|").split(" | "))
        name = folder.strip("`/")
        below = set(PACKAGES[PACKAGES.index(name) + 1 :]) if may == "everything below" else set()
        rows[name] = below if may in ("everything below", "nothing else") else set(may.split(", "))
    return rows


def test_the_readme_layout_is_the_folders():
    for page in (ROOT / "README.md", ROOT / "docs" / "layout.md"):
        rows = _layout_table(page)
        assert list(rows) == list(PACKAGES), f"{page.name}'s Layout table names the packages, top down"
        assert {name: may | {name} for name, may in rows.items()} == MAY_IMPORT, page.name
    folders = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert folders - {"tests", "bench"} == set(PACKAGES), "a package at the top that the Layout does not name"
