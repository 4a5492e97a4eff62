"""Mentions found in a message, and the context blocks they become (attachments.py); the UTF-16
offsets of totem/complete (totem_lsp/complete.py)."""

from __future__ import annotations

from totem_engine.attachments import (
    MAX_CHARS,
    Attachment,
    excerpt,
    find_mentions,
    with_attachments,
)
from totem_lsp.complete import utf16_index, utf16_length


def test_mentions_are_found_in_order_and_addresses_are_not_mentions():
    found = find_mentions("fix @src/a.py#L3-9, see #selection and @b.md. Mail me@x.org #buffers @c.py#L4")
    assert [(m.kind, m.token, m.path, m.first, m.last) for m in found] == [
        ("file", "@src/a.py#L3-9", "src/a.py", 3, 9),
        ("selection", "#selection", None, None, None),
        ("file", "@b.md", "b.md", None, None),
        ("file", "@c.py#L4", "c.py", 4, 4),
    ]


def test_a_range_is_clamped_to_the_file_and_a_long_text_cut_with_a_note():
    assert excerpt("a\nb\nc\n", 2, 9, "f") == ("b\nc", (2, 3))
    assert excerpt("a\nb\n", None, None, "f") == ("a\nb", None)
    long = "".join(f"line {n}\n" for n in range(10_000))
    body, _ = excerpt(long, None, None, "big.txt")
    assert len(body) <= MAX_CHARS and body.endswith("[Cut to fit: read big.txt for the rest.]")


def test_blocks_come_before_the_text_each_once():
    named = Attachment("context", "a.py")
    lines = Attachment("selection", "a.py", body="x = 1", lines=(2, 2), mention="#selection")
    found = Attachment("diagnostics", "a.py", body="1:1 error E: bad", findings=1, mention="#diagnostics")
    text = with_attachments("why?", [named, lines, lines, found])
    assert text == (
        '<context file="a.py"/>\n\n<context file="a.py" lines="2-2">\nx = 1\n</context>\n\n'
        '<context file="a.py" diagnostics="1">\n1:1 error E: bad\n</context>\n\nwhy?'
    )
    assert lines.wire() == {"kind": "selection", "path": "a.py", "lines": [2, 2], "mention": "#selection"}


def test_utf16_offsets_count_astral_characters_twice():
    text = "\U0001F600ab"
    assert utf16_length(text) == 4
    assert [utf16_index(text, n) for n in range(6)] == [0, 0, 1, 2, 3, 3]


def test_a_secret_files_attachment_is_named_not_shown_unless_reading_it_needs_no_asking(tmp_path):
    from totem_engine.attachments import Attachment, withheld_secrets
    from totem_engine.mentions import unasked_reads
    from totem_engine.permissions import Policy, RuleRef

    (tmp_path / ".env").write_text("API_KEY=hunter2\n")
    (tmp_path / "app.py").write_text("x = 1\n")
    attached = [Attachment("file", ".env", body="API_KEY=hunter2", seen=b"API_KEY=hunter2\n", mention="@.env"),
                Attachment("file", "app.py", body="x = 1", seen=b"x = 1\n")]
    kept = withheld_secrets(attached, unasked_reads(Policy(), tmp_path))
    assert [a.render() for a in kept] == ['<context file=".env"/>', '<context file="app.py">\nx = 1\n</context>']
    assert kept[0].seen is None and kept[0].mention == "@.env"
    allowed = Policy(rules=[RuleRef(source="config", permission="read", pattern=".env", action="allow")])
    assert withheld_secrets(attached, unasked_reads(allowed, tmp_path)) == attached
