"""The user's shared service: launches over stdio that share one process, and its checks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from micro_rag_mcp.service.launch import ask_sessions
from micro_rag_mcp.service.runtime import SOCKET, ServiceDir, UnsafeDirectory, install_key
from tests.mcpkit import stdio_params, wait_complete
from tests.stdiokit import RawServer
from tests.waiting import eventually

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def through_service(monkeypatch: pytest.MonkeyPatch, service_runtime: Path) -> Path:
    """Every launch in these tests goes through the service (whatever the suite's mode)."""
    monkeypatch.delenv("MICRO_RAG_STANDALONE", raising=False)
    return service_runtime


def service_dir(root: Path) -> Path:
    return root / install_key()


def service_pid(root: Path) -> int | None:
    try:
        return int((service_dir(root) / "service.pid").read_text())
    except FileNotFoundError:
        return None


def folder(tmp_path: Path, name: str, text: str) -> Path:
    data = tmp_path / name
    data.mkdir()
    (data / "notes.md").write_text(text)
    return data


def test_a_launch_relays_its_session_to_the_service(tmp_path: Path, service_runtime: Path) -> None:
    data = folder(tmp_path, "docs", "# Garden\n\nTomatoes need six hours of sunlight.\n")

    async def main() -> tuple[Any, int | None]:
        async with Client(stdio_params(data, title="Garden", inst="Ask me.")) as client:
            assert client.server_info is not None and client.server_info.name == "Garden"
            assert client.instructions == "Ask me."
            await wait_complete(client)
            out = await client.call_tool("search", {"query": "tomatoes sunlight"})
            return out.structured_content, service_pid(service_runtime)

    out, pid = anyio.run(main)
    assert out["results"][0]["path"] == "notes.md"
    assert pid is not None and pid != os.getpid()
    mode = (service_dir(service_runtime)).stat().st_mode & 0o777
    assert mode == 0o700
    # The last session ended: the service (grace 0 here) exits and removes its socket.
    eventually(lambda: not (service_dir(service_runtime) / SOCKET).exists(), "the service left")


def test_two_launches_on_one_folder_share_one_engine(tmp_path: Path, service_runtime: Path) -> None:
    data = folder(tmp_path, "docs", "# Garden\n\nTomatoes need six hours of sunlight.\n")

    async def main() -> tuple[list[dict[str, Any]] | None, list[Any]]:
        async with (
            Client(stdio_params(data, title="First")) as a,
            Client(stdio_params(data, title="Second")) as b,
        ):
            await wait_complete(a)
            await wait_complete(b)
            where = ServiceDir.open(service_runtime, install_key())
            try:
                sessions = ask_sessions(where, str(data / "index"))
            finally:
                where.close()
            answers: list[Any] = [None, None]

            async def reindex(i: int, client: Client) -> None:
                result = await client.call_tool("reindex", {"force": True})
                answers[i] = result.structured_content

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(reindex, 0, a)
                tasks.start_soon(reindex, 1, b)
            return sessions, answers

    sessions, answers = anyio.run(main)
    assert sessions is not None
    assert sorted(s["title"] for s in sessions) == ["First", "Second"]
    assert all(not answer["running"] and answer["files_updated"] == 1 for answer in answers)
    assert sorted(answer["joined"] for answer in answers) == [False, True]  # one pass
    log = (service_dir(service_runtime) / "service.log").read_text()
    assert log.count("reindex (force):") == 1


def test_ten_racing_launches_start_one_service(tmp_path: Path, service_runtime: Path) -> None:
    data = folder(tmp_path, "docs", "Ten launches race for one service.\n")
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "race", "version": "1"},
        },
    }
    params = stdio_params(data)
    launches = [
        subprocess.Popen(
            [params.command, *params.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=params.env,
        )
        for _ in range(10)
    ]
    names = []
    for launch in launches:
        assert launch.stdin is not None and launch.stdout is not None
        launch.stdin.write(json.dumps(initialize).encode() + b"\n")
        launch.stdin.flush()
        names.append(json.loads(launch.stdout.readline())["result"]["serverInfo"]["name"])
    pids, logs = set(), set()
    for launch in launches:
        _, err = launch.communicate(b"", timeout=60)
        for line in _lines(err, "through"):
            pid, _, log = line.split("(process ")[1].rstrip(")").partition("; its log: ")
            pids.add(pid)
            logs.add(log)
    assert names == ["Docs"] * 10
    assert len(pids) == 1, pids
    (log,) = logs  # each launch says where the service it joined writes its log
    assert Path(log).name == "service.log" and Path(log).is_file()


def _lines(err: bytes, word: str) -> list[str]:
    return [line for line in err.decode().splitlines() if word in line]


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o701])
def test_a_runtime_directory_open_to_others_is_refused(tmp_path: Path, mode: int) -> None:
    root = tmp_path / "run"
    root.mkdir(mode=0o700)
    root.chmod(mode)
    with pytest.raises(UnsafeDirectory, match=f"mode {mode:04o}"):
        ServiceDir.open(root, "key")
    root.chmod(0o700)
    (root / "key").mkdir(mode=0o700)
    (root / "key").chmod(mode)
    with pytest.raises(UnsafeDirectory, match=f"mode {mode:04o}"):
        ServiceDir.open(root, "key")


def test_a_runtime_directory_that_is_a_link_or_not_ours_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(UnsafeDirectory, match="cannot be opened safely"):
        ServiceDir.open(tmp_path / "link", "key")
    if os.getuid() != 0:
        pytest.skip("giving a directory to another user needs root")
    os.chown(real, 65534, 65534)
    with pytest.raises(UnsafeDirectory, match="belongs to uid 65534"):
        ServiceDir.open(real, "key")


def test_a_launch_with_an_unsafe_runtime_directory_serves_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "open-run"
    root.mkdir()
    root.chmod(0o777)
    monkeypatch.setenv("MICRO_RAG_RUNTIME_DIR", str(root))
    data = folder(tmp_path, "docs", "The quokka ferry leaves at dawn.\n")
    server = RawServer(data)
    server.initialize()
    assert server.read_one()["result"]["serverInfo"]["name"] == "Docs"
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.exited_within(60) == 0
    eventually(lambda: any("not using the shared service" in x for x in server.log), "the why")
    assert list(root.iterdir()) == []  # nothing was made in it


def test_the_service_refuses_a_peer_of_another_user() -> None:
    other_python = shutil.which("python3", path="/usr/bin:/bin")
    if os.getuid() != 0 or other_python is None:
        pytest.skip("connecting as another user needs root (and a python it may run)")
    # A root of its own right under /tmp, which the other user can pass through whatever
    # the suite's temporary folder is.
    service_runtime = Path(tempfile.mkdtemp(prefix="mrr-peer-", dir="/tmp"))
    where = ServiceDir.open(service_runtime, install_key())
    service = subprocess.Popen(
        [sys.executable, "-m", "micro_rag_mcp.service", "--root", str(service_runtime)]
        + ["--key", install_key(), "--grace", "30"],
        stderr=subprocess.DEVNULL,
    )
    try:
        eventually(lambda: (service_dir(service_runtime) / SOCKET).exists(), "it listens")
        for folder_ in (service_runtime, service_dir(service_runtime)):
            folder_.chmod(0o711)  # let the other user reach the socket: the peer check holds
        (service_dir(service_runtime) / SOCKET).chmod(0o666)
        code = (
            "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
            'try:\n    s.sendall(b\'{"sessions": "/"}\\n\')\n    print(repr(s.recv(100)))\n'
            "except OSError:  # reset or broken: refused all the same\n    print(b'')\n"
        )
        other = subprocess.run(
            [other_python, "-c", code, str(service_dir(service_runtime) / SOCKET)],
            user=65534,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.stdout.strip() == "b''", other.stderr  # closed, nothing answered
        mine = socket.socket(socket.AF_UNIX)
        mine.connect(str(service_dir(service_runtime) / SOCKET))
        mine.sendall(b'{"sessions": "/"}\n')
        assert json.loads(mine.makefile().readline()) == {"sessions": []}
        mine.close()
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(60)
        where.close()
        shutil.rmtree(service_runtime, ignore_errors=True)


def test_a_stale_socket_and_pid_are_replaced(tmp_path: Path, service_runtime: Path) -> None:
    where = ServiceDir.open(service_runtime, install_key())
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(where.socket)  # bound, never listening: what a killed service leaves
    stale.close()
    where.close()
    (service_dir(service_runtime) / "service.pid").write_text("999999\n")
    data = folder(tmp_path, "docs", "The albatross followed the ship.\n")

    async def main() -> Any:
        async with Client(stdio_params(data)) as client:
            await wait_complete(client)
            return (await client.call_tool("search", {"query": "albatross"})).structured_content

    assert anyio.run(main)["results"][0]["path"] == "notes.md"


def test_a_killed_service_is_replaced_and_the_session_goes_on(
    tmp_path: Path, service_runtime: Path
) -> None:
    data = folder(tmp_path, "docs", "# Birds\n\nThe cassowary is shy.\n")

    async def main() -> tuple[int, int, Any]:
        async with Client(stdio_params(data), mode="legacy") as client:
            await wait_complete(client)
            first = service_pid(service_runtime)
            assert first is not None
            os.kill(first, signal.SIGKILL)
            eventually(lambda: service_pid(service_runtime) != first, "a new service", 60)
            out = await client.call_tool("search", {"query": "cassowary"})
            assert not out.is_error, out.content
            await wait_complete(client)
            out = await client.call_tool("search", {"query": "cassowary"})
            second = service_pid(service_runtime)
            assert second is not None
            return first, second, out

    first, second, out = anyio.run(main)
    assert first != second
    assert not out.is_error and out.structured_content["results"][0]["path"] == "notes.md"


def test_standalone_serves_in_the_launch_itself(
    tmp_path: Path, service_runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = folder(tmp_path, "docs", "Knead the bread dough for ten minutes.\n")

    async def main(*flags: str) -> Any:
        async with Client(stdio_params(data, *flags)) as client:
            await wait_complete(client)
            return (await client.call_tool("search", {"query": "dough"})).structured_content

    assert anyio.run(main, "--standalone")["results"][0]["path"] == "notes.md"
    monkeypatch.setenv("MICRO_RAG_STANDALONE", "1")
    assert anyio.run(main)["results"][0]["path"] == "notes.md"
    assert not service_dir(service_runtime).exists()  # no service was ever started


def test_racing_launches_in_threads_reach_one_service(service_runtime: Path) -> None:
    """``connect`` itself, from threads of one process: one service, every one connected."""
    from micro_rag_mcp.service.launch import connect

    where = ServiceDir.open(service_runtime, install_key())
    args = ["--root", str(service_runtime), "--key", install_key(), "--grace", "0"]
    socks: list[socket.socket] = []
    lock = threading.Lock()

    def race() -> None:
        sock = connect(where, args)
        with lock:
            socks.append(sock)

    threads = [threading.Thread(target=race) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    try:
        assert len(socks) == 10
        peers = {s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12) for s in socks}
        assert len({int.from_bytes(p[:4], "little") for p in peers}) == 1  # one pid
    finally:
        for sock in socks:
            sock.close()
        where.close()


def micro_rag(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "micro_rag_mcp.cli.app", *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_micro_rag_status_and_search_use_the_running_service(tmp_path: Path) -> None:
    data = folder(tmp_path, "docs", "# Birds\n\nThe cassowary is shy.\n")

    async def main() -> tuple[Any, Any]:
        async with (
            Client(stdio_params(data, title="Birds")) as a,
            Client(stdio_params(data, title="Zoo")) as b,
        ):
            await wait_complete(a)
            await wait_complete(b)
            status = await anyio.to_thread.run_sync(micro_rag, "status", str(data), "--json")
            found = await anyio.to_thread.run_sync(
                micro_rag, "search", str(data), "cassowary", "-v"
            )
            return status, found

    status, found = anyio.run(main)
    assert status.returncode == 0, status.stderr
    assert sorted(s["title"] for s in json.loads(status.stdout)["sessions"]) == ["Birds", "Zoo"]
    assert found.returncode == 0 and "notes.md" in found.stdout, found.stderr
    assert "answered by the running service" in found.stderr
    after = micro_rag("status", str(data), "--json")  # no service now: the index itself
    assert after.returncode == 0 and json.loads(after.stdout)["sessions"] == []
    alone = micro_rag("search", str(data), "cassowary", "-v")
    assert "notes.md" in alone.stdout and "answered by the running" not in alone.stderr


def test_a_request_in_flight_when_the_service_dies_gets_an_error_to_send_it_again(
    tmp_path: Path, service_runtime: Path
) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    for i in range(30):  # a forced pass over these takes a while: the kill lands inside it
        text = "\n\n".join(f"Report {i}, paragraph {p}, on glaciers and fjords." for p in range(20))
        (data / f"report{i:02d}.txt").write_text(text)
    server = RawServer(data)
    server.wait_searchable("glaciers", idle=True)
    first = service_pid(service_runtime)
    assert first is not None
    server.send(
        {
            "jsonrpc": "2.0",
            "id": "long",
            "method": "tools/call",
            "params": {"name": "reindex", "arguments": {"force": True}},
        }
    )
    os.kill(first, signal.SIGKILL)
    answer = server.read_one()
    assert answer["id"] == "long" and "send the request again" in answer["error"]["message"]
    server.send(
        {
            "jsonrpc": "2.0",
            "id": "after",
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "fjords"}},
        }
    )
    after = server.read_one()
    assert after["id"] == "after" and not after["result"].get("isError"), after
    assert service_pid(service_runtime) not in (None, first)
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.exited_within(60) == 0


def test_a_launch_imports_nothing_heavy_before_it_relays() -> None:
    code = (
        "import sys, micro_rag_mcp.service.entry, micro_rag_mcp.service.client;"
        "import micro_rag_mcp.service.forward, micro_rag_mcp.serve.stdio;"
        "heavy = {'numpy', 'pydantic', 'mcp', 'faiss', 'onnxruntime', 'tokenizers', 'sqlite3'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
