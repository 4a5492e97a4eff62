"""What a door brings when its client holds the files or runs the commands (an editor's open
buffers, an ACP client's file system and terminal), and the path rules it must keep: the
engine's own types and functions, named here for the doors."""

from totem_engine.tools.base import ProposedFile
from totem_engine.tools.bash import HeadTail
from totem_engine.tools.command_runner import CommandRunner
from totem_engine.tools.command_runner import Outcome as CommandOutcome
from totem_engine.tools.read import looks_binary
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace, FileStat, Workspace, write_atomically
from totem_engine.workspace.paths import project_path, relative, resolve_in_project

__all__ = [
    "CommandOutcome", "CommandRunner", "DiskWorkspace", "FileStat", "HeadTail", "ProposedFile", "ToolError", "Workspace",
    "looks_binary", "project_path", "relative", "resolve_in_project", "write_atomically",
]
