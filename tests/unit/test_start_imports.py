"""A worker replacing a lost one should poll soon: what `mint worker` imports before it polls leaves out the
model SDKs and the MCP SDK (2.5 s and 0.8 s of a start on 2 cores; infra/models/sdks.py), which load on first
use or in the background once it serves."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _printed(probe: str) -> str:
    """What `probe` prints, run in a fresh interpreter (this one has imported who knows what)."""
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return run.stdout.strip()


def test_a_worker_starts_without_importing_the_model_or_mcp_sdks():
    probe = (
        "import sys, process.cli, process.stack, process.worker\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'mcp') if m in sys.modules))"
    )
    assert _printed(probe) == "[]"


def test_warm_imports_the_model_sdks():
    probe = (
        "import sys, threading\n"
        "from infra.models import sdks\n"
        "sdks.warm()\n"
        "[t.join() for t in threading.enumerate() if t.name == 'import-sdks']\n"
        "print(sorted(m for m in sdks.NAMES if m in sys.modules))"
    )
    assert _printed(probe) == "['anthropic', 'openai']"
