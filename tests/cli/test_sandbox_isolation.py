"""What the sandbox cuts a command off from (issue 34, holes 3 and 7), through the real
``totem run``: no host unix socket is reachable (a path one in the project, beside it, in /tmp,
and an abstract one) from ``bash``, a job or a ``run_script`` script, with or without the
network; and nothing a command starts outlives it (so not the session either), not a ``setsid`` child
nor a double fork."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from tests.cli.test_sandbox import configured
from tests.support.model_server import text_reply, tool_reply
from tests.support.processes import processes_with

# Tries each address given (a path, or "@name" for an abstract socket) and says what happened.
PROBE = textwrap.dedent("""\
    import socket, sys
    for address in ADDRESSES:
        try:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.settimeout(5)
            client.connect("\\0" + address[1:] if address.startswith("@") else address)
            print("connected", address)
        except OSError as exc:
            print("refused", address, exc.errno)
""")


class Listeners:
    """Unix sockets listening in this process; ``accepted`` counts the connections each took."""

    def __init__(self, addresses: list[str]):
        self.addresses = addresses
        self.accepted: dict[str, int] = {address: 0 for address in addresses}
        self.sockets: list[socket.socket] = []
        self._stop = threading.Event()

    def __enter__(self) -> "Listeners":
        for address in self.addresses:
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind("\0" + address[1:] if address.startswith("@") else address)
            server.listen()
            server.settimeout(0.1)
            self.sockets.append(server)
            threading.Thread(target=self._accept, args=(server, address), daemon=True).start()
        return self

    def _accept(self, server: socket.socket, address: str) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted[address] += 1
            connection.close()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for server in self.sockets:
            server.close()


@pytest.fixture
def host_sockets(totem, tmp_path):
    """A listener in the project, one beside it (an ``$XDG_RUNTIME_DIR``-like folder the sandbox
    shows read-only), one in the real /tmp, and an abstract one."""
    runtime = tmp_path / "run"
    runtime.mkdir()
    outside = Path(tempfile.mkdtemp(prefix="totem-sock-", dir="/tmp"))
    addresses = [str(totem.project / "p.sock"), str(runtime / "bus"), str(outside / "docker.sock"),
                 f"@totem-test-{os.getpid()}-{tmp_path.name}"]
    try:
        with Listeners(addresses) as listeners:
            yield listeners
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def probe_file(totem, listeners: Listeners) -> str:
    (totem.project / "probe.py").write_text(f"ADDRESSES = {listeners.addresses!r}\n" + PROBE)
    return "python3 probe.py"


def assert_none_reached(listeners: Listeners, output: str) -> None:
    assert sum(listeners.accepted.values()) == 0, (listeners.accepted, output)
    assert output.count("refused") == len(listeners.addresses), output


@pytest.mark.parametrize("network", ["false", "true"])
def test_bash_reaches_no_host_unix_socket(totem, host_sockets, network):
    configured(totem, f"sandbox_network = {network}")
    totem.server.enqueue(tool_reply([("bash", {"command": probe_file(totem, host_sockets)})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("probe", extra=("--yes",))
    assert result.code == 0, result.stderr
    [end] = [e for e in result.of("toolEnd") if e["tool"] == "bash"]
    assert_none_reached(host_sockets, end["output"])


def test_a_job_reaches_no_host_unix_socket(totem, host_sockets):
    totem.server.enqueue(tool_reply([("job", {"action": "start", "command": probe_file(totem, host_sockets)})]))
    totem.server.enqueue(tool_reply([("job", {"action": "wait", "id": "job1", "timeout": 30})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("probe", extra=("--yes",))
    assert result.code == 0, result.stderr
    waited = [e for e in result.of("toolEnd") if e["tool"] == "job"][-1]
    assert_none_reached(host_sockets, waited["output"])


def test_a_script_and_its_commands_reach_no_host_unix_socket(totem, host_sockets):
    # The script's own process tries, then a command it runs (totem.run).
    script = (f"ADDRESSES = {host_sockets.addresses!r}\n" + PROBE
              + f"import totem\nprint(totem.run({probe_file(totem, host_sockets)!r})['output'])\n")
    totem.server.enqueue(tool_reply([("run_script", {"script": script})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("probe", extra=("--yes",))
    assert result.code == 0, result.stderr
    [end] = [e for e in result.of("toolEnd") if e["tool"] == "run_script"]
    assert sum(host_sockets.accepted.values()) == 0, (host_sockets.accepted, end["output"])
    assert end["output"].count("refused") == 2 * len(host_sockets.addresses), end["output"]


def test_a_command_may_still_use_a_socket_pair_and_loopback(totem):
    command = ("python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'pair'); print(b.recv(4).decode());"
               " s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print('tcp', s.getsockname()[0])\"")
    totem.server.enqueue(tool_reply([("bash", {"command": command})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("probe", extra=("--yes",))
    assert result.code == 0, result.stderr
    [end] = [e for e in result.of("toolEnd") if e["tool"] == "bash"]
    assert "pair\ntcp 127.0.0.1" in end["output"], end["output"]


ESCAPING = "setsid sleep 7301 & ( sleep 7302 & ) ; setsid sh -c '( sleep 7303 & )' ; echo started"


def test_what_a_job_or_a_command_left_behind_does_not_outlive_the_session(totem):
    totem.server.enqueue(tool_reply([("job", {"action": "start", "command": ESCAPING})]))
    totem.server.enqueue(tool_reply([("job", {"action": "wait", "id": "job1", "timeout": 2})]))
    totem.server.enqueue(tool_reply([("bash", {"command": "setsid sleep 7304 & echo left"})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("leave things running", extra=("--yes",))
    assert result.code == 0, result.stderr
    waited = [e for e in result.of("toolEnd") if e["tool"] == "job"][-1]
    assert "started" in waited["output"] and "[job1 exited with code 0]" in waited["output"], waited["output"]
    [left] = [e for e in result.of("toolEnd") if e["tool"] == "bash"]
    assert "left" in left["output"] and left["status"] == "ok", left["output"]  # the call did not wait for it
    assert [pid for n in range(7301, 7305) for pid in processes_with(f"sleep {n}")] == []
