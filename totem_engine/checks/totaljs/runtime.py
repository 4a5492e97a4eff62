"""Runtime: configuration from CONF, periodic work from CRON / ON('service')."""

from __future__ import annotations

from collections.abc import Iterator

from totem_engine.checks.totaljs.engine import ANTI_PATTERNS_URL, Hit, Rule, Source, rule

RULES: list[Rule] = []


@rule(RULES, "TJS030", "warning", "no process.env in feature code: use CONF", ANTI_PATTERNS_URL)
def process_env(src: Source) -> Iterator[Hit]:
    """``process.env`` in application code.

    Source: Total.js anti-patterns, "process.env instead of CONF": boot may read
    ``process.env.PORT``; feature code reads ``CONF``; a value that must come from the
    environment is assigned to ``CONF`` once in a definition (totaljs/aicontext
    totaljs/anti-patterns.md). So: not flagged in the start script (``index.js``), in tests and
    scripts, in browser code, nor at the top level of a file under ``definitions/`` (runs once
    at load); flagged everywhere else, including inside functions of a definition.
    """
    if not src.role.server:
        return
    for node in src.nodes("member_expression"):
        obj, prop = node.child_by_field_name("object"), node.child_by_field_name("property")
        if obj is None or prop is None or src.text(obj) != "process" or src.text(prop) != "env":
            continue
        if src.role.definition and src.enclosing_function(node) is None:
            continue
        yield Hit(
            node.start_byte,
            node.end_byte,
            "Read configuration from `CONF.key`, not `process.env` (map an environment variable"
            " in the `config` file, or assign `CONF.key` once at the top of a definition).",
        )


@rule(RULES, "TJS031", "warning", "no setInterval: use CRON or ON('service')", ANTI_PATTERNS_URL)
def set_interval(src: Source) -> Iterator[Hit]:
    """``setInterval(...)`` in server code.

    Source: Total.js anti-patterns, "setInterval instead of framework timers": in definitions
    use ``CRON('*/5 * * * *', fn)`` or ``ON('service', function(counter) {...})``, which fires
    about once a minute (totaljs/aicontext totaljs/anti-patterns.md; architecture.md: "Periodic
    work: CRON() or ON('service') in definitions"). Browser code (``public/``, pages) may use it.
    """
    if src.role.browser or src.role.outside:
        return
    for call in src.nodes("call_expression"):
        if src.call_name(call) in ("setInterval", "global.setInterval"):
            function = call.child_by_field_name("function")
            yield Hit(
                function.start_byte,
                function.end_byte,
                "Do not use setInterval in server code: schedule with `CRON('*/5 * * * *', fn)`"
                " or `ON('service', function(counter) { ... })` (about once a minute) in a definition.",
            )
