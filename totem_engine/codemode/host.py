"""The process a code-mode script runs in: started by runner.py as a program (``python -I -S -u
host.py SCRATCH PROJECT``), never imported by Totem. Standard library only.

At start, fd 0 and fd 1 are the API pipe (Totem's answers in, the script's requests out, one
JSON object a line); they are moved aside, so the script's own ``print`` goes to fd 2 with its
errors, and ``import totem`` gives it the API (``call`` sends one request and waits for its
answer; a command of ``run`` is started by Totem, not here). Then an audit hook (PEP 578) refuses what the script may not do on its own: open a
file outside its scratch folder and the Python installation (the project too, unless PROJECT
is given: ``agent_mode``, read only), write anywhere but the scratch folder, open a socket,
start or signal a process, load native code with ctypes. A hook is not a sandbox (decisions.md says what
it does not stop); it keeps a well-meant script to the API, the one door to the project.
"""

import builtins
import json
import os
import sys
import traceback
import types

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# Audit events that change the file system, and which of their arguments are paths.
CHANGES = {
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1), "os.symlink": (0, 1),
    "os.link": (0, 1), "os.chmod": (0,), "os.chown": (0,), "os.truncate": (0,), "os.utime": (0,),
    "shutil.rmtree": (0,), "shutil.copyfile": (1,), "shutil.copytree": (1,), "shutil.move": (0, 1),
}
LISTS = {"os.listdir": 0, "os.scandir": 0}
PROCESSES = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn")
SIGNALS = ("os.kill", "os.killpg", "signal.pthread_kill")


class TotemError(Exception):
    """What Totem answered instead of a result: a path outside the project, an edit that did not
    match (with the file's real lines), a file that does not exist, ..."""


def main() -> None:
    scratch, project = sys.argv[1], sys.argv[2]
    requests = os.fdopen(os.dup(1), "w", encoding="utf-8")
    answers = os.fdopen(os.dup(0), "r", encoding="utf-8")
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(2, 1)  # print() and the traceback share one stream, in order
    sys.modules["totem"] = api(requests, answers)
    readable = [scratch, sys.base_prefix, sys.base_exec_prefix, sys.prefix, os.devnull, "/dev/urandom"]
    if project:
        sys.path.insert(0, project)
        readable.append(project)
    with open(os.path.join(scratch, "script.py"), encoding="utf-8") as handle:
        source = handle.read()
    code = compile(source, "script.py", "exec")
    sys.addaudithook(guard(os.path.realpath(scratch), [os.path.realpath(p) for p in readable]))
    try:
        exec(code, {"__name__": "__main__", "__builtins__": builtins})  # noqa: S102 (running the script is the point)
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 (whatever the script raised is its result)
        # The script's own frames only: the host's exec is not the model's business.
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
        sys.exit(1)


def api(requests, answers) -> types.ModuleType:
    """The ``totem`` module the script imports."""
    counter = iter(range(1, sys.maxsize))

    def call(method: str, **params):
        requests.write(json.dumps({"id": next(counter), "method": method, "params": params}) + "\n")
        requests.flush()
        line = answers.readline()
        if not line:
            raise SystemExit("Totem closed the API.")
        answer = json.loads(line)
        if "error" in answer:
            raise TotemError(answer["error"])
        return answer["result"]

    module = types.ModuleType("totem", "Totem's API: the project, through the same code as the tools.")
    module.TotemError = TotemError

    def files(pattern: str = "**/*") -> list:
        """The project's files matching a glob pattern, as project-relative paths, sorted."""
        return call("files", pattern=pattern)

    def read(path: str, offset: int = 1, limit: int = 0) -> str:
        """The file's text (as staged by this script), from line ``offset``, ``limit`` lines (0: all)."""
        return call("read", path=path, offset=offset, limit=limit)

    def search(pattern: str, path: str = ".", include: str = "") -> str:
        """What the grep tool answers: matching lines as path:line: text."""
        return call("search", pattern=pattern, path=path, include=include)

    def glob(pattern: str) -> str:
        """What the glob tool answers: matching paths, newest first."""
        return call("glob", pattern=pattern)

    def write(path: str, content: str) -> str:
        """Stage the whole new content of a file (created when absent)."""
        return call("write", path=path, content=content)

    def edit(path: str, old: str, new: str, replace_all: bool = False) -> str:
        """Stage the replacement of ``old`` by ``new`` in the file, matched as the edit tool does."""
        return call("edit", path=path, old=old, new=new, replace_all=replace_all)

    def delete(path: str) -> str:
        """Stage the deletion of a file."""
        return call("delete", path=path)

    def run(command: str, timeout: int = 0) -> dict:
        """Run a shell command in the project, asked like bash: {"output": ..., "exit_code": ...}.
        It sees the changes staged so far."""
        return call("run", command=command, timeout=timeout)

    def tests(timeout: int = 0) -> dict:
        """Run the project's tests (its test command), as run() does."""
        return call("tests", timeout=timeout)

    for function in (files, read, search, glob, write, edit, delete, run, tests):
        setattr(module, function.__name__, function)
    return module


def guard(scratch: str, readable: list):
    def inside(path, roots) -> bool:
        if isinstance(path, int):
            return True  # an open descriptor: it was let through when it was opened
        real = os.path.realpath(os.fsdecode(path))
        return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writes = bool(flags & WRITE_FLAGS) if mode is None else any(c in (mode or "") for c in "wax+")
            if not inside(path, [scratch] if writes else readable):
                kind = "write" if writes else "open"
                raise PermissionError(f"A script may not {kind} {path}: use the totem API (import totem) for project files.")
        elif event in CHANGES:
            for index in CHANGES[event]:
                if index < len(args) and args[index] is not None and not inside(args[index], [scratch]):
                    raise PermissionError(f"A script may not change {args[index]}: use the totem API (import totem).")
        elif event in LISTS:
            if args and args[0] is not None and not inside(args[0], readable):
                raise PermissionError(f"A script may not list {args[0]}: use totem.files().")
        elif event.startswith(PROCESSES):
            raise PermissionError("A script may not start a process: it reads, edits and prints through the totem API.")
        elif event in SIGNALS:
            raise PermissionError("A script may not signal a process.")
        elif event.startswith("socket."):
            raise PermissionError("A script may not use the network.")
        elif event.startswith("ctypes."):
            raise PermissionError("A script may not load native code.")

    return hook


if __name__ == "__main__":
    main()
