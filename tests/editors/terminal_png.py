"""A terminal screen as a PNG, for docs/images: the text of ``tmux capture-pane -e -p`` (with its
SGR colour escapes, ECMA-48 / xterm's ctlseqs) drawn as HTML in a monospace font, and shot by
headless Chromium (``--screenshot``), the one scripts/setup-editors.sh installs for VS Code.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

# xterm's default 16 colours, then the 6x6x6 cube and the grey ramp of the 256.
BASE = ["#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
        "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff"]
FG, BG = "#d0d0d0", "#1c1c1c"
SGR = re.compile(r"\x1b\[([0-9;:]*)m")
CELL = (8.43, 17)  # the pixels of one cell at 14 px DejaVu Sans Mono (0.602 em), line-height 17 px


def colour(n: int) -> str:
    if n < 16:
        return BASE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    grey = 8 + 10 * (n - 232)
    return "#%02x%02x%02x" % (grey, grey, grey)


def apply(style: dict, params: list[int]) -> None:
    """One SGR sequence's parameters applied to ``style`` (fg, bg, bold, italic, underline, reverse)."""
    i = 0
    while i < len(params):
        p = params[i]
        if p == 0:
            style.clear()
        elif p in (1, 3, 4, 7):
            style[{1: "bold", 3: "italic", 4: "underline", 7: "reverse"}[p]] = True
        elif p in (22, 23, 24, 27):
            style.pop({22: "bold", 23: "italic", 24: "underline", 27: "reverse"}[p], None)
        elif 30 <= p <= 37 or 90 <= p <= 97:
            style["fg"] = colour(p - 30 if p < 90 else p - 82)
        elif 40 <= p <= 47 or 100 <= p <= 107:
            style["bg"] = colour(p - 40 if p < 100 else p - 92)
        elif p in (39, 49):
            style.pop("fg" if p == 39 else "bg", None)
        elif p in (38, 48) and i + 1 < len(params):
            key = "fg" if p == 38 else "bg"
            if params[i + 1] == 5 and i + 2 < len(params):
                style[key], i = colour(params[i + 2]), i + 2
            elif params[i + 1] == 2 and i + 4 < len(params):
                style[key], i = "#%02x%02x%02x" % tuple(params[i + 2:i + 5]), i + 4
        i += 1


def to_html(screen: str) -> str:
    """The captured screen as one <pre> of styled spans."""
    out, style = [], {}
    for line in screen.rstrip("\n").split("\n"):
        pos = 0
        for m in [*SGR.finditer(line), None]:
            text = line[pos:m.start() if m else len(line)]
            if text:
                fg, bg = style.get("fg", FG), style.get("bg", BG)
                if style.get("reverse"):
                    fg, bg = bg, fg
                css = f"color:{fg};background:{bg}" + (";font-weight:bold" if style.get("bold") else "") + \
                    (";font-style:italic" if style.get("italic") else "") + \
                    (";text-decoration:underline" if style.get("underline") else "")
                out.append(f'<span style="{css}">{html.escape(text)}</span>')
            if m:
                apply(style, [int(p or 0) for p in re.split("[;:]", m.group(1))])
                pos = m.end()
        out.append("\n")
    return ("<!doctype html><meta charset=utf-8><body style='margin:0;background:%s'>"
            "<pre style='margin:0;font:14px/17px \"DejaVu Sans Mono\",monospace;color:%s'>%s</pre>"
            % (BG, FG, "".join(out)))


def save(screen: str, path: Path, size: tuple[int, int]) -> None:
    """``screen`` (a capture of ``size`` columns by rows) drawn into the PNG ``path``."""
    chromium = shutil.which("chromium")
    assert chromium, "no chromium: scripts/setup-editors.sh vscode installs it"
    width, height = round(size[0] * CELL[0]) + 4, size[1] * CELL[1]
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "screen.html"
        page.write_text(to_html(screen))
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             f"--user-data-dir={folder}/profile", f"--window-size={width},{height}",
             f"--screenshot={path}", page.as_uri()],
            check=True, capture_output=True, timeout=60,
        )
