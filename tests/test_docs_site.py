"""The documentation site (mkdocs.yml, docs/): every page's shell and Python snippets run against a real
`mint up`, as the README's do (tests/test_readme.py says how), one page at a time, each from a fresh
directory of its own in which the first snippet that talks to Mint finds `mint up` started (the pages take it
as running, as the README's Set up leaves it): one `mint up` per environment, shared by the pages. Also: the README stays a first hour, its links into the site
lead somewhere, and the API reference is the app's own OpenAPI document.

One page alone: `pytest tests/test_docs_site.py -k task-language.md`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.test_readme import ROOT, Runner, SharedStacks, page_snippets

DOCS = ROOT / "docs"
PAGES = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
README_MAX_LINES = 250  # what Mint is, how to set it up and test it, a tour, and where to read next
OPENAPI = DOCS / "openapi.json"  # what docs/api-reference.md renders (the neoteroi.mkdocsoad plugin)


def test_the_readme_is_a_first_hour():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move the rest into docs/"


def test_the_readmes_links_into_the_site_lead_somewhere():
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\((docs/[^)#\s]+)", readme)
    assert targets, "the README says where to read next"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_page_names_its_snippets_languages():
    # `text` blocks show output (an answer, a log line): there is nothing in them to run.
    unknown = [
        str(s)
        for page in PAGES
        for s in page_snippets(DOCS / page)
        if s.lang not in ("bash", "python", "yaml", "text")
    ]
    assert not unknown, f"snippets the tests cannot run: {unknown}"


@pytest.fixture(scope="module")
def mint_stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedStacks]:
    """Stopped once the pages have run: stacks left idle would weigh on every test after them."""
    shared = SharedStacks(tmp_path_factory.mktemp("mint-stacks"))
    yield shared
    shared.close()


@pytest.mark.parametrize("page", PAGES)
def test_every_snippet_on_the_page_runs(page: str, tmp_path: Path, mint_stacks: SharedStacks):
    runner = Runner(tmp_path, implicit_up=True, shared=mint_stacks)
    try:
        for snippet in page_snippets(DOCS / page):
            runner.run(snippet)
    finally:
        runner.close()


async def test_the_api_reference_is_the_apps_openapi(stack):
    async with httpx.AsyncClient(base_url=stack.url) as client:
        served = (await client.get("/openapi.json")).json()
    kept = json.loads(OPENAPI.read_text()) if OPENAPI.exists() else None
    if kept != served:
        OPENAPI.write_text(json.dumps(served, indent=1, ensure_ascii=False) + "\n")
    assert kept == served, "docs/openapi.json was not the app's OpenAPI document: rewritten, commit it"
