"""The turn: the project it works in (agent.py), the loop of attempts (loop.py), one step and its
retries (step.py), one step's stream (stream.py), its request fitted to the window (fitting.py),
the user's request stored (request.py), the tool round (calls.py), what a turn does for a kind of
model and the decisions it returns (policy.py, small.py), and the guards that end or rescue a run
(guards.py, repetition.py, unmade.py).

Nothing is imported here, so importing one module of the package loads only what it needs.
"""
