"""The seccomp filter of every sandboxed command: no unix socket can be made, so no host one reached.

A unix socket with a path is reached through the file system, and a read-only bind does not stop
``connect`` (the kernel asks for write permission on the socket file, not a writable mount); it
can live anywhere the user can write (``$XDG_RUNTIME_DIR``, ``~/.docker``, the project), so
hiding folders cannot find them all. An abstract socket is cut by a network namespace of the
command's own, which ``sandbox_network = true`` does not give. So the filter refuses
``socket(AF_UNIX, ...)`` itself (``EACCES``): no socket of that family exists in the sandbox to
connect with. ``socketpair`` stays allowed (a pair between two processes of the command reaches
nothing outside), and ``io_uring`` is refused, whose ``IORING_OP_SOCKET`` would make a socket
without the system call the filter sees. A system call of another ABI (32-bit x86 on x86-64, x32)
is refused whole: the filter knows the native numbers only.

The program is classic BPF over ``struct seccomp_data`` (``nr`` at offset 0, ``arch`` at 4,
``args[0]`` at 16, little-endian), as seccomp(2) and linux/filter.h describe it; bubblewrap loads
it from a file descriptor (``--seccomp FD``, bubblewrap 0.11) after ``PR_SET_NO_NEW_PRIVS``. It
exists for x86-64, AArch64 and RISC-V 64; elsewhere ``program`` is None and unix sockets are not
cut (docs/decisions.md).
"""

from __future__ import annotations

import platform
import struct
from pathlib import Path

__all__ = ["FD", "loaded", "program", "written"]

# <linux/audit.h> arch tokens and each ABI's numbers of socket(2) (io_uring's are the same on all).
_ARCHES: dict[str, tuple[int, int]] = {
    "x86_64": (0xC000003E, 41),
    "aarch64": (0xC00000B7, 198),
    "riscv64": (0xC00000F3, 198),
}
_IO_URING = (425, 426, 427)  # io_uring_setup, io_uring_enter, io_uring_register
_X32_BIT = 0x40000000  # x32 system calls: the x86-64 arch token with this bit in the number
_AF_UNIX = 1
_EACCES = 13

FD = 9  # where bubblewrap reads it: a shell opens it there (``dash`` knows one digit only)

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_REFUSE = 0x00050000 | _EACCES  # SECCOMP_RET_ERRNO


def program(machine: str | None = None) -> bytes | None:
    """The filter as bubblewrap reads it (an array of ``struct sock_filter``) for ``machine``
    (``platform.machine()``); None where its numbers are not known."""
    known = _ARCHES.get(machine or platform.machine())
    if known is None:
        return None
    arch, socket_nr = known
    # Each jump is written with the index of the line it lands on; BPF counts lines skipped.
    n = len(_IO_URING)
    check_socket, allow, refuse = 6 + n, 8 + n, 9 + n
    lines = [
        (_LD_ABS, None, None, 4),  # 0: A = arch
        (_JEQ, 2, refuse, arch),  # 1: a foreign ABI is refused
        (_LD_ABS, None, None, 0),  # 2: A = nr
        (_JGE, refuse, 4, _X32_BIT),  # 3: x32 is refused
        (_JEQ, check_socket, 5, socket_nr),  # 4
        *((_JEQ, refuse, 6 + i, nr) for i, nr in enumerate(_IO_URING)),  # 5 .. 4 + n
        (_RET, None, None, _ALLOW),  # 5 + n
        (_LD_ABS, None, None, 16),  # check_socket: A = args[0], the domain (its low half)
        (_JEQ, refuse, allow, _AF_UNIX),
        (_RET, None, None, _ALLOW),  # allow
        (_RET, None, None, _REFUSE),  # refuse
    ]
    return b"".join(
        struct.pack("<HBBI", code, _skip(index, jt), _skip(index, jf), k) for index, (code, jt, jf, k) in enumerate(lines)
    )


def _skip(index: int, target: int | None) -> int:
    """A jump from line ``index`` to line ``target`` as BPF writes it: the lines skipped."""
    return 0 if target is None else target - index - 1


def written(path: Path) -> Path | None:
    """The program written to ``path`` (None where there is none)."""
    code = program()
    if code is None:
        return None
    path.write_bytes(code)
    return path


def loaded(bwrap_argv: list[str], path: Path | None) -> list[str]:
    """``bwrap_argv`` (bwrap and its options, up to ``--``) run with the program at ``path`` as its
    filter: a shell opens the file on ``FD`` and becomes bwrap; as it is where ``path`` is None."""
    if path is None:
        return bwrap_argv
    cut = bwrap_argv.index("--")
    return ["/bin/sh", "-c", f'exec "$@" {FD}<"$0"', str(path), *bwrap_argv[:cut], "--seccomp", str(FD), *bwrap_argv[cut:]]
