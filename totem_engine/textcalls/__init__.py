"""Stream filters for models that put into their text what belongs elsewhere, and the text form
of tool calls taught to them.

- ``think.py``: ``think_filter``, thoughts before ``</think>`` turned into reasoning (``split_think`` for a whole text).
- ``scanner.py``: ``text_tool_calls``, calls written as text turned into tool calls, by a state
  machine over ``buffer.py``'s ``ScanBuffer`` whose states are the readers of ``readers.py``.
- ``formats.py``: the call formats read (Hermes, Qwen XML, fenced or bare JSON, shell aliases).
- ``fileblocks.py``: a small model's whole-file format (path line and fenced block): read into
  ``write`` calls, written (``file_block``), and a history replayed as written (``as_written``).
- ``prompts.py``: the prompt sections that teach these forms.
"""

from .fileblocks import as_written, file_block
from .formats import looks_like_a_call
from .prompts import FILE_BLOCK_TOOLS, small_tool_prompt, tool_prompt
from .buffer import TextCallStats
from .scanner import text_tool_calls
from .think import MAX_HOLD, split_think, think_filter

__all__ = [
    "FILE_BLOCK_TOOLS",
    "MAX_HOLD",
    "TextCallStats",
    "as_written",
    "file_block",
    "looks_like_a_call",
    "small_tool_prompt",
    "text_tool_calls",
    "split_think",
    "think_filter",
    "tool_prompt",
]
