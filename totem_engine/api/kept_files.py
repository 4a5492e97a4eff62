"""What a stored file-changing call changed (its tool part's ``files``), for a door that shows a
reopened session's diffs: the engine's own reader (kept_files.py), named here for the doors."""

from totem_engine.kept_files import proposed_files
from totem_engine.tools.base import ProposedFile

__all__ = ["ProposedFile", "proposed_files"]
