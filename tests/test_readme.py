"""Every shell and Python snippet in the README runs, against a real `mint up`, so the README cannot drift.
The documentation site's pages run the same way (tests/test_docs_site.py), each from a directory of its own.

The snippets run as a reader would run them, from a fresh directory holding the repository's `examples/`,
with three honest changes: the ports `mint up` prints (8080, 7233, 8233) become the free ones this test
chose; `mint up` lines start (or restart) a stack in the background instead of holding the terminal; and
the terminal's answers come from stdin. Commands that cannot run inside the suite are checked another way,
each rule below saying why. YAML snippets are parsed and, where they are steps, validated as a task.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.helpers import as_foreground
from tests.stack import MintUp

ROOT = Path(__file__).resolve().parent.parent
SNIPPET_TIMEOUT = 300  # a guard against a hang, never a measure
# What a reader types at `mint run`'s prompts (the approval example's wait, the email tool's answer).
TERMINAL_ANSWERS = "approved: true\n" * 20
# How `mint run` shows a sleep of a minute or more: `sleeping until 2026-05-02 09:00:00 UTC (in 23h 59m)`.
LONG_SLEEP = re.compile(r"sleeping until .*\(in \d+[dhm]\b")


@dataclass(frozen=True)
class Snippet:
    line: int  # where its opening fence is, 1-based
    lang: str
    text: str
    page: str = "README.md"  # the file it is in, from the repository's root

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.lang})"


def readme_snippets() -> list[Snippet]:
    return page_snippets(ROOT / "README.md")


def page_snippets(path: Path) -> list[Snippet]:
    """The fenced blocks of a Markdown page that name their language, in order."""
    page = str(path.relative_to(ROOT))
    snippets, lines = [], path.read_text().splitlines()
    fence: tuple[int, str] | None = None
    body: list[str] = []
    for number, line in enumerate(lines, 1):
        if fence is None and line.startswith("```") and line[3:].strip():
            fence, body = (number, line[3:].strip()), []
        elif fence is not None and line.startswith("```"):
            snippets.append(Snippet(fence[0], fence[1], "\n".join(body), page))
            fence = None
        elif fence is not None:
            body.append(line)
    return snippets


def commands(text: str) -> Iterator[str]:
    """A shell snippet's commands: continued lines joined, trailing comments (two spaces, then #) dropped,
    a here-document kept whole with its command (its lines as written), and `A && B` split where A installs
    (installing is what the suite's own set-up did)."""
    lines = iter(text.replace("\\\n", " ").splitlines())
    for line in lines:
        line = re.sub(r"\s{2,}#.*$", "", line).strip()
        if not line or line.startswith("#"):
            continue
        if here := re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line):
            body = [line]
            for inside in lines:
                body.append(inside)
                if inside.strip() == here.group(1):
                    break
            yield "\n".join(body)
            continue
        first, sep, rest = line.partition(" && ")
        if sep and first.startswith("pip install"):
            yield first
            yield rest
        else:
            yield line


def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project.get("optional-dependencies", {}))


def check_install(command: str) -> None:
    """Not run (the suite runs inside what it installs): the extras it names must exist."""
    for extra in re.findall(r"\.\[([\w,]+)\]", command):
        assert set(extra.split(",")) <= _extras(), f"{command}: no such extra"


def check_bench(command: str) -> None:
    """Not run (each bench takes minutes and wants a quiet machine): the module must exist and accept the
    flags shown."""
    words = shlex.split(command)
    module = words[words.index("-m") + 1]
    path = ROOT / (module.replace(".", "/") + ".py")
    assert path.exists(), f"{command}: {module} does not exist"
    source = path.read_text()
    for flag in (w for w in words if w.startswith("--")):
        assert f'"{flag}"' in source, f"{command}: {module} takes no {flag}"


class SharedStacks:
    """One `mint up` per environment, shared by the pages of a test module (each page in a directory of its
    own whose `.mint` points at the stack's data dir): a stack takes seconds to start, a page's snippets less."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.stacks: dict[frozenset[tuple[str, str]], MintUp] = {}

    def up(self, env: dict[str, str]) -> MintUp:
        key = frozenset(env.items())
        if key not in self.stacks:
            workdir = self.root / f"stack{len(self.stacks)}"
            workdir.mkdir(parents=True)
            runner = Runner(workdir)
            runner.mint_up(" ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), "mint", "up"]))
            assert runner.up is not None
            self.stacks[key] = runner.up
        return self.stacks[key]

    def close(self) -> None:
        for up in self.stacks.values():
            up.stop()
            up.kill()


class Runner:
    """Runs a page's snippets in order in one directory, starting `mint up` where they say so. A page of the
    documentation site may take `mint up` as running already (the README's Set up): with `implicit_up`, the
    first snippet that talks to Mint starts one."""

    def __init__(self, workdir: Path, implicit_up: bool = False, shared: SharedStacks | None = None) -> None:
        self.workdir = workdir
        self.implicit_up = implicit_up
        self.shared = shared
        self.up: MintUp | None = None
        self.up_env: dict[str, str] | None = None
        (workdir / "examples").symlink_to(ROOT / "examples")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("MINT_", "TEMPORAL_"))}
        self.env.pop("OPENAI_API_KEY", None)
        self.env.pop("ANTHROPIC_API_KEY", None)
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env.get('PATH', '')}"

    def close(self) -> None:
        if self.up is not None and self.shared is None:
            self.up.stop()
            self.up.kill()

    def ports(self, text: str) -> str:
        if self.up is None and self.implicit_up:
            self.mint_up("mint up")
        assert self.up is not None, "a snippet talks to Mint before any snippet starts `mint up`"
        for default, port in (
            (8080, self.up.api_port),
            (7233, self.up.temporal_port),
            (8233, self.up.ui_port),
        ):
            text = re.sub(rf"(localhost|127\.0\.0\.1):{default}\b", rf"\g<1>:{port}", text)
        return text

    def mint_up(self, command: str) -> None:
        """`[NAME=value ...] mint up`: a stack with that environment (the previous one stopped first: one
        `mint up` per data dir), in the background."""
        words = shlex.split(command)
        env = dict(w.split("=", 1) for w in words[: words.index("mint")])
        assert words[words.index("mint") + 1 :] == ["up"], f"{command}: flags the test does not pass on"
        if self.up is not None and env == self.up_env:
            return
        if self.shared is not None:
            self.up, self.up_env = self.shared.up(env), env
            link = self.workdir / ".mint"
            link.unlink(missing_ok=True)
            link.symlink_to(self.up.data_dir)  # where the snippets' `mint` commands and `.mint/api_key` look
            return
        self.close()
        # No MINT_API_KEY: `mint up` makes one and keeps it in .mint/api_key, where the snippets read it.
        self.up = MintUp(self.workdir / ".mint", key="")
        own = {k: v for k, v in self.up.env.items() if k == "XDG_STATE_HOME"}  # not the user's own pointer
        self.up.env = {**self.env, **own, "MINT_API_PORT": str(self.up.api_port), "MINT_API_KEY": "", **env}
        self.up.start()
        self.up_env = env

    def shell_env(self) -> dict[str, str]:
        """A reader's shell: what `mint up` serves, where a snippet for an operator's own Temporal names it."""
        assert self.up is not None
        return {**self.env, "TEMPORAL_ADDRESS": f"127.0.0.1:{self.up.temporal_port}"}

    def shell(self, snippet: Snippet, script: str) -> None:
        """Run a shell script; a `mint run` it ends with that reaches a long sleep (a minute or more: a short
        one is waited out) is interrupted there, as a reader would press Ctrl-C, and must say that the
        execution goes on."""
        process = subprocess.Popen(
            as_foreground(["bash", "-e", "-o", "pipefail", "-c", self.ports(script)]),
            cwd=self.workdir,
            env=self.shell_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(TERMINAL_ANSWERS)
        process.stdin.close()
        output, interrupted = [], False
        # A guard against a hang (the reading below ends only when the script does): never a measure.
        guard = threading.Timer(SNIPPET_TIMEOUT, os.killpg, (process.pid, signal.SIGKILL))
        guard.start()
        for line in process.stdout:
            output.append(line)
            if LONG_SLEEP.search(line) and not interrupted:
                os.killpg(process.pid, signal.SIGINT)
                interrupted = True
        process.stdout.close()
        code = process.wait()
        guard.cancel()
        text = "".join(output)
        if interrupted:
            assert "goes on" in text, f"{snippet}: Ctrl-C did not say the execution goes on:\n{text}"
        else:
            assert code == 0, f"{snippet} exited {code}:\n{script}\n---\n{text}"

    def run(self, snippet: Snippet) -> None:
        if snippet.lang == "yaml":
            return check_yaml(snippet)
        if snippet.lang == "text":
            return None
        if snippet.lang == "python":
            script = self.ports(snippet.text)
            done = subprocess.run(
                [sys.executable, "-c", script],
                cwd=self.workdir,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=SNIPPET_TIMEOUT,
            )
            assert done.returncode == 0, f"{snippet}:\n{script}\n---\n{done.stdout}{done.stderr}"
            return None
        assert snippet.lang == "bash", f"{snippet}: a snippet in a language this test does not run"
        script: list[str] = []
        for command in commands(snippet.text):
            if command.startswith("pip install"):
                check_install(command)
            elif command.startswith("pytest"):
                continue  # the suite itself: this test is part of it
            elif "python -m bench." in command:
                check_bench(command)
            elif re.search(r"(^|\s)mint up$", command):
                self.mint_up(command)
            else:
                script.append(command)
        if script:
            self.shell(snippet, "\n".join(script))
        return None


def check_yaml(snippet: Snippet) -> None:
    from workflows.validate import validate_task

    document = yaml.safe_load(snippet.text)
    if isinstance(document, list):  # steps
        validate_task({"name": "readme", "main": document})
    elif isinstance(document, dict) and "main" in document:  # a whole task
        validate_task(document)


def test_the_readme_names_its_snippets_languages():
    # `text` blocks show output (an answer, a log line): there is nothing in them to run.
    unknown = [str(s) for s in readme_snippets() if s.lang not in ("bash", "python", "yaml", "text")]
    assert not unknown, f"snippets this test cannot run: {unknown}"


def test_every_readme_snippet_runs(tmp_path):
    runner = Runner(tmp_path)
    try:
        for snippet in readme_snippets():
            runner.run(snippet)
    finally:
        runner.close()
