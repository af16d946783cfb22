"""The `ffmpeg` integration: a real ffmpeg (imageio-ffmpeg's static build) run confined.

Three layers, each tested on its own: the confinement (activities/confined.py) with a shell in ffmpeg's place,
so that it holds whatever the allow-list lets through; the allow-list (ffmpeg_command.py) against an attack
corpus, each case refused or run confined and harmless; and the integration through a task on the stack.
"""

from __future__ import annotations

import base64
import io
import os
import shlex
import shutil
import socket
import stat
import tempfile
import threading
import wave
from pathlib import Path

import imageio_ffmpeg
import psutil
import pytest
from temporalio.exceptions import ApplicationError

from activities import confined
from activities.integrations import ffmpeg
from activities.integrations.ffmpeg_command import Refused, filters, parse
from tests.helpers import run_task
from tests.integration_fakes import SLOW_SECONDS

SECRET = "canary-" + os.urandom(8).hex()


def wav(seconds: float = 1.0, rate: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x01" * int(seconds * rate))
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def real_ffmpeg(monkeypatch, tmp_path):
    """imageio-ffmpeg's binary as `ffmpeg` on the worker's PATH (in tmp_path/bin)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "ffmpeg").symlink_to(imageio_ffmpeg.get_ffmpeg_exe())
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


class Listener:
    """A TCP port on 127.0.0.1 that counts who connects (nothing confined may)."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def canary(monkeypatch, tmp_path):
    """A secret in the worker's environment and in a file the worker can read."""
    monkeypatch.setenv("MINT_CANARY_SECRET", SECRET)
    path = Path(tempfile.gettempdir()) / f"mint-canary-{os.urandom(4).hex()}"
    path.write_text(SECRET)
    path.chmod(0o644)  # readable by anyone on the machine: only the confinement keeps ffmpeg from it
    yield path
    path.unlink()


# The confinement alone, with a shell where ffmpeg would be ------------------------------------------------------


async def _confined_shell(script: str) -> confined.Finished:
    bash = shutil.which("bash") or "/bin/bash"
    assert await confined.problem(bash, ["-c", "true"]) is None
    with tempfile.TemporaryDirectory() as folder:
        return await confined.run(bash, ["-c", script], Path(folder))


async def test_the_confined_process_sees_no_environment_variable(canary):
    assert os.environ["MINT_CANARY_SECRET"] == SECRET
    finished = await _confined_shell("env >&2; echo END >&2")
    assert finished.returncode == 0, finished.stderr_tail
    names = {line.split("=", 1)[0] for line in finished.stderr_tail.splitlines() if "=" in line}
    # What bash sets for itself, nothing of the worker's.
    assert names <= {"PWD", "SHLVL", "_", "OLDPWD"}, names
    assert SECRET not in finished.stderr_tail


async def test_the_confined_process_cannot_open_files_outside_its_folder(canary):
    script = (
        f"for f in /etc/passwd /etc/shadow {canary} /proc/self/environ /proc/1/environ {Path.home()}/.bashrc; do "
        '  if cat "$f" >/dev/null 2>&1; then echo "READ $f" >&2; fi; '
        "done; "
        'for d in /usr/x /tmp/x /etc/x /x; do if : 2>/dev/null >"$d"; then echo "WROTE $d" >&2; fi; done; '
        ": > mine && echo OWN >&2; echo END >&2"
    )
    finished = await _confined_shell(script)
    assert "END" in finished.stderr_tail, finished.stderr_tail
    assert "READ" not in finished.stderr_tail and "WROTE" not in finished.stderr_tail, finished.stderr_tail
    assert "OWN" in finished.stderr_tail  # its own folder is writable
    assert canary.read_text() == SECRET


async def test_the_confined_process_cannot_connect_to_a_listening_local_port(listener):
    script = (
        f"if exec 3<>/dev/tcp/127.0.0.1/{listener.port}; then echo CONNECTED >&2; fi; "
        "if exec 4<>/dev/tcp/1.1.1.1/53; then echo OUT >&2; fi; echo END >&2"
    )
    finished = await _confined_shell(script)
    assert "END" in finished.stderr_tail, finished.stderr_tail
    assert "CONNECTED" not in finished.stderr_tail and "OUT" not in finished.stderr_tail
    assert listener.connections == 0


async def test_the_confined_process_is_unprivileged_and_bounded():
    finished = await _confined_shell(
        'echo "uid=$(id -u 2>/dev/null || echo ?) caps=$(grep CapEff /proc/self/status 2>/dev/null)" >&2; '
        'echo "cpu=$(ulimit -t) file=$(ulimit -f) mem=$(ulimit -v) core=$(ulimit -c)" >&2'
    )
    limits = confined.Limits()
    assert f"uid={confined.NOBODY} " in finished.stderr_tail, finished.stderr_tail
    assert f"cpu={limits.cpu_seconds} " in finished.stderr_tail
    assert f"file={limits.file_bytes // 1024} " in finished.stderr_tail  # bash counts kilobytes
    assert f"mem={limits.memory_bytes // 1024} " in finished.stderr_tail and "core=0" in finished.stderr_tail


async def test_a_confined_process_dies_with_its_call():
    import asyncio

    marker = f"mint-sleeper-{os.urandom(4).hex()}"
    task = asyncio.ensure_future(_confined_shell(f"exec -a {marker} sleep 300"))
    await asyncio.sleep(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.5)
    left = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
    assert left == []


# The allow-list against an attack corpus ---------------------------------------------------------------------

HLS = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nhttp://127.0.0.1:{port}/a.ts\n#EXTINF:1,\n{canary}\n#EXT-X-ENDLIST\n"
CONCAT = "ffconcat version 1.0\nfile {canary}\nfile http://127.0.0.1:{port}/x\n"

# (cmd, input files): every way we know to make ffmpeg name a file, a URL, a device or a protocol.
ATTACKS = [
    ("-f u8 -ar 8000 -ac 1 -i subfile,,start,0,end,0,,:/proc/self/environ -c copy -f u8 out.raw", None),
    ("-i /etc/passwd out.wav", None),
    ("-i file:/etc/passwd out.wav", None),
    ("-i {canary} -c copy out.wav", None),
    ("-i input -f tee '[f=u8]/tmp/pwned'", None),
    ("-i input -c copy -f tee '[f=wav]out.wav|[f=wav]/tmp/pwned'", None),
    ("-protocol_whitelist file,http,tcp -f concat -safe 0 -i input out.wav", CONCAT),
    ("-f concat -i input out.wav", CONCAT),
    ("-f hls -i input out.wav", HLS),
    ("-i input -filter_complex amovie={canary} out.wav", None),
    ("-i input -vf movie={canary} out.mp4", None),
    ("-f lavfi -i sine out.wav", None),
    ("-i input -lavfi 'amovie={canary}[a]' -map '[a]' out.wav", None),
    ("-dump_attachment:t '' -i input out.wav", None),
    ("-i pipe:0 out.wav", None),
    ("-i input pipe:1", None),
    ("-i input -f u8 fd:1", None),
    ("-i input -f wav http://127.0.0.1:{port}/x", None),
    ("-i tcp://127.0.0.1:{port} out.wav", None),
    ("-i input ../out.wav", None),
    ("-i input /tmp/pwned.wav", None),
    ("-i input ~/pwned.wav", None),
    ("-i input -af 'volume=/volume={canary}' out.wav", None),
    ("-i input -af \"'/volume'={canary}\" out.wav", None),
    ("-i input -af 'volume=1:\\/precision={canary}' out.wav", None),
    ("-i input -af 'volume=1\\:/volume={canary}' out.wav", None),
    ("-i input -af 'volume=1: /volume={canary}' out.wav", None),
    ("-/filter_complex {canary} -i input out.wav", None),
    ("-filter_complex_script {canary} -i input out.wav", None),
    ("-i input -vf subtitles={canary} out.mp4", None),
    ("-i input -vf drawtext=textfile={canary} out.mp4", None),
    ("-i input -vf sendcmd=f={canary} out.mp4", None),
    ("-i input -af 'volume=1,amovie={canary}' out.wav", None),
    ("-i input -af 'volume=1;amovie={canary}' out.wav", None),
    ("-i input -af '[in]amovie={canary}[out]' out.wav", None),
    ("-i input -af 'volume=1\\,amovie={canary}' out.wav", None),
    ("-i input -af \"volume='1,amovie={canary}'\" out.wav", None),
    ("-i input -af \"[a']volume,amovie={canary}[b']\" out.wav", None),
    ("-i input -vstats_file /tmp/pwned out.wav", None),
    ("-i input -progress http://127.0.0.1:{port}/ out.wav", None),
    ("-report -i input out.wav", None),
    ("-i input -passlogfile /tmp/pwned out.wav", None),
    ("-i input -sdp_file /tmp/pwned out.wav", None),
    ("-i input -attach {canary} out.mkv", None),
    ("-init_hw_device vaapi=/dev/dri/renderD128 -i input out.wav", None),
    ("-headers 'X: y' -i http://127.0.0.1:{port}/ out.wav", None),
    ("-i input -f image2 'out%d.png'", None),
    ("-i input -f segment -segment_list /tmp/pwned 'out%d.wav'", None),
    ("-i input -hls_key_info_file {canary} out.m3u8", None),
    ("-i input -c:a copy -i {canary} out.wav", None),
    ("-i input -f u8 /proc/self/fd/1", None),
    ("-i input -f u8 dev/null", None),
    ("-i input -threads 100000 out.wav", None),
    ("-i input -x264opts stats={canary} out.mp4", None),
    ("-i input 'out.wav\n/etc/pwned'", None),
    ("-i input out.wav; cat {canary} > out2.wav", None),
    ("-i input -c:a pcm_s16le -i input -filter_complex 'ebur128=metadata=1' out.wav", None),
    ("-i input -f null -", None),
    ("-i input -vf curves=psfile=../usr/share/x.acv out.mp4", None),
    ("-i input -c copy out.m3u8", None),
    ("-i input -c copy out.ffconcat", None),
    ("-re -stream_loop -1 -i input -f null out", None),
    ("-i input -- out.wav", None),
    ("-i input -map_metadata 0 -metadata 'title=$(cat {canary})' out.wav", None),  # allowed: text, no shell
    ("-i input -c copy out.wav", HLS),  # allowed: an HLS playlist as a plain input is not followed
    ("-i input -c copy out.wav", CONCAT),  # allowed: nor is an ffconcat list
    ("-loglevel debug -i input -af volume=0.5 out.wav", None),  # allowed
    ("-i input " + "-an " * 200_000 + "out.wav", None),  # past what the kernel takes (E2BIG)
    ("-i input -metadata 'title=" + "t" * 200_000 + "' out.wav", None),
]


@pytest.mark.parametrize(("cmd", "content"), ATTACKS, ids=[f"{i:02d}" for i in range(len(ATTACKS))])
async def test_an_attack_is_refused_or_harmless(real_ffmpeg, canary, listener, cmd, content):
    before = set(Path(tempfile.gettempdir()).iterdir())
    words = cmd.format(canary=canary, port=listener.port)
    data = (content.format(canary=canary, port=listener.port)).encode() if content else wav()
    try:
        answer = await ffmpeg.call(None, "bash_cmd", {}, {"cmd": words, "file": b64(data)})
    except ApplicationError as exc:
        assert exc.type in ("BadToolCall", "IntegrationRefused"), exc
        text = str(exc)
    else:
        text = base64.b64decode(answer["fileoutput"] or "").decode(errors="replace")
    assert SECRET not in text and "root:x:0:0" not in text
    assert listener.connections == 0
    assert canary.read_text() == SECRET
    made = {p for p in set(Path(tempfile.gettempdir()).iterdir()) - before if "pwned" in p.name}
    assert made == set()
    assert not any(p.name.startswith("pwned") for p in Path.home().iterdir())


ALLOWED = {
    "-i input -map_metadata 0 -metadata 'title=$(cat {canary})' out.wav",
    "-i input -c copy out.wav",
    "-loglevel debug -i input -af volume=0.5 out.wav",
}


def test_the_list_refuses_all_but_the_harmless_cases_of_the_corpus():
    assert len(ATTACKS) >= 40
    for cmd, _ in ATTACKS:
        try:
            parse(shlex.split(cmd.format(canary="/tmp/c", port=1)), {"input"})
        except Refused:
            assert cmd not in ALLOWED, cmd
        else:
            assert cmd in ALLOWED, cmd


def test_every_input_reads_only_local_media():
    command = parse(["-i", "input", "-i", "input0", "out.wav"], {"input", "input0"})
    assert command.argv.count("-protocol_whitelist") == 2
    at = command.argv.index("-protocol_whitelist")
    assert command.argv[at + 1] == "file" and command.argv[at + 2] == "-format_whitelist"
    assert "hls" not in command.argv[at + 3].split(",") and "concat" not in command.argv[at + 3].split(",")


@pytest.mark.parametrize(
    ("graph", "names"),
    [
        ("scale=iw/2:ih/2", ["scale"]),
        ("[0:v]scale=320:240[a];[a][1:v]overlay=10:10[out]", ["scale", "overlay"]),
        ("select='eq(pict_type,I)',scale=1:1", ["select", "scale"]),
        ("volume=1\\,amovie=x", ["volume"]),
    ],
)
def test_filtergraphs_are_read_as_ffmpeg_reads_them(graph, names):
    assert [name for name, _ in filters(graph)] == names


# Through a task on the stack ---------------------------------------------------------------------------------


def _task(arguments: dict, **step) -> dict:
    tool = {"name": "the_tool", "type": "integration", "integration": {"provider": "ffmpeg"}}
    return {"name": "ffmpeg", "tools": [tool], "main": [{"tool": "the_tool", "arguments": arguments, **step}]}


async def test_ffmpeg_converts_a_file(mapi, real_ffmpeg):
    arguments = {"cmd": "ffmpeg -i input -ar 4000 -af 'volume=0.5' out.wav", "file": b64(wav(rate=8000))}
    execution, _ = await run_task(mapi, _task(arguments))
    assert execution["status"] == "succeeded", execution["error"]
    output = execution["output"]
    assert (output["result"], output["mime_type"]) == (True, "audio/x-wav")
    with wave.open(io.BytesIO(base64.b64decode(output["fileoutput"]))) as converted:
        assert converted.getframerate() == 4000


async def test_ffmpeg_takes_no_shell(mapi, real_ffmpeg, tmp_path):
    arguments = {"cmd": "-i input out.wav; touch pwned $(id)", "file": b64(wav())}
    execution, _ = await run_task(mapi, _task(arguments))
    assert execution["status"] == "failed"
    assert "'out.wav;' is not a plain file name" in execution["error"], execution["error"]
    assert not (tmp_path / "pwned").exists()


async def test_ffmpeg_may_not_read_files_outside_its_folder(mapi, real_ffmpeg):
    execution, _ = await run_task(mapi, _task({"cmd": "-i /etc/passwd out.txt"}))
    assert execution["status"] == "failed"
    assert "-i takes one of the files given in `file`" in execution["error"], execution["error"]


async def test_ffmpeg_failing_fails_the_step_with_its_message(mapi, real_ffmpeg):
    arguments = {"cmd": "-i input out.wav", "file": b64(b"not a media file")}
    execution, _ = await run_task(mapi, _task(arguments))
    assert execution["status"] == "failed"
    assert "ffmpeg failed (" in execution["error"] and "input" in execution["error"], execution["error"]


async def test_ffmpeg_slower_than_the_steps_timeout_is_stopped(mapi, real_ffmpeg):
    arguments = {"cmd": "-stream_loop -1 -i input -f null out", "file": b64(wav(0.1))}
    task = _task(arguments, timeout=SLOW_SECONDS / 3, retry={"max_attempts": 1})
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert "did not finish within its timeout" in execution["error"], execution["error"]
    left = [
        p for p in psutil.process_iter(["cmdline"]) if "mint-ffmpeg-" in " ".join(p.info["cmdline"] or [])
    ]
    assert left == []


async def test_ffmpeg_without_the_binary_fails_saying_what_to_install(mapi, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no ffmpeg on the worker's PATH
    execution, _ = await run_task(mapi, _task({"cmd": "-version"}))
    assert execution["status"] == "failed"
    assert "ffmpeg is not installed on this worker" in execution["error"], execution["error"]


async def test_ffmpeg_where_it_cannot_be_confined_does_not_run(mapi, real_ffmpeg, monkeypatch):
    # A bwrap that fails as it does on a host without user namespaces, named by MINT_BWRAP.
    fake = real_ffmpeg / "bwrap"
    monkeypatch.setenv("MINT_BWRAP", str(fake))
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    arguments = {"cmd": "-i input out.wav", "file": b64(wav())}
    execution, _ = await run_task(mapi, _task(arguments))
    assert execution["status"] == "failed"
    assert "ffmpeg cannot run confined on this worker, so it does not run" in execution["error"]
    assert "No permissions to create new namespace" in execution["error"], execution["error"]


async def test_a_worker_runs_a_bounded_number_of_ffmpeg_processes_at_once(real_ffmpeg):
    import asyncio

    arguments = {"cmd": "-stream_loop -1 -i input -f null out", "file": b64(wav(0.1))}
    calls = [
        asyncio.ensure_future(asyncio.wait_for(ffmpeg.call(None, "bash_cmd", {}, arguments), 4))
        for _ in range(ffmpeg.MAX_RUNNING + 2)
    ]
    most = 0
    while not all(call.done() for call in calls):
        folders = {
            word
            for p in psutil.process_iter(["cmdline"])
            for word in p.info["cmdline"] or []
            if "mint-ffmpeg-" in word
        }
        most = max(most, len(folders))  # one folder a running ffmpeg (its bwrap has more than one process)
        await asyncio.sleep(0.2)
    assert all(isinstance(call.exception(), TimeoutError) for call in calls)
    assert 1 <= most <= ffmpeg.MAX_RUNNING
