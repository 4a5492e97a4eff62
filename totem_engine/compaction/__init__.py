"""Keeping each request inside the model's window: a derived message list, never a rewritten history.

``fit(stored, build=..., window=..., tools=...)`` is the loop's one entry point, called before
every model call. It returns the messages to send (``Fitted``); the stored session is never
changed, except that a summary checkpoint, when one is written, is appended as a new part. In
order:

1. Tool results by budget. When the estimate passes ``compact_at`` of the window, the oldest tool
   results are replaced, oldest first, by a one-line account of what was done, which the tool
   that made the result writes (``Tool.account``: "read src/app.py (348 lines)", "ran `pytest -q`:
   exit 1; ...AssertionError", "12 matches for 'foo'", "edited x"), until the estimate is under
   that budget. The newest round (the last step's calls) stays whole, unless that round alone is
   over the budget: then its results are cut to fit, each with a note saying how to get the rest
   (``Tool.cut``). Results of tools ``kept_on_compaction``
   (``skill``'s bodies, ``ask``'s answers) are kept.
2. Summary checkpoint. If that is not enough, the older turns are folded into a summary written
   by the model (``complete``, prompt ``prompts/summary.txt``), stored as a ``checkpoint`` part
   ``{"text", "covers": id of the last message it covers, ...}`` on a new message at the end of
   the session, and replayed in every later request in place of the turns it covers
   (``apply_checkpoints``). A later checkpoint summarises the earlier one with the turns since.
3. Pinned ledger. Whenever the list is compacted, its first message is a pinned user message
   carrying, verbatim, the user's first request, the todo list and the AGENTS.md instructions
   attached to tool results (the root AGENTS.md is in the system prompt, never compacted);
   the checkpoint's summary follows it in the same message. ``ledger_present`` checks it.
4. If the summary request overflows (``ContextOverflowError``), the oldest items of what is
   summarised are dropped and it is tried again; if nothing is left, or the provider fails
   otherwise, a summary made of the one-line accounts is used, so compaction always runs.
5. ``force=True`` (after a provider's ``ContextOverflowError``) compacts to half the budget.
   The loop retries the step once; a second overflow ends the turn.

Last, if the list is still over the window itself (a huge user message, a long summary), the
largest messages are cut with a note until it fits; ``Fitted.over`` says when even that failed
(the system prompt, tools and reserved output alone do not fit).

The modules, one job each: ``fit`` (the stages above, on the derived messages), ``derived`` (the
derived history kept from step to step: each stored message converted once), ``accounts``
(a result's tool, arguments and summary, asked of the tools), ``checkpoints`` (stored summaries
and their replay), ``summary`` (the summary request and its fallback), ``ledger`` (the pinned
message), ``budgets`` (the shares of the window).
"""

from totem_engine.compaction.accounts import ACCOUNT_PREFIX
from totem_engine.compaction.checkpoints import CHECKPOINT_PART, Checkpoint, apply_checkpoints
from totem_engine.compaction.derived import DerivedHistory
from totem_engine.compaction.fit import Fitted, fit
from totem_engine.compaction.ledger import PINNED_HEADER, Ledger, build_ledger, ledger_present
from totem_engine.compaction.summary import Complete, completer

__all__ = [
    "ACCOUNT_PREFIX", "CHECKPOINT_PART", "PINNED_HEADER", "Checkpoint", "Complete", "DerivedHistory", "Fitted",
    "Ledger", "apply_checkpoints", "build_ledger", "completer", "fit", "ledger_present",
]
