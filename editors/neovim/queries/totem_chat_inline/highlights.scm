; Inline Markdown of the chat (lua/totem/markdown.lua): Neovim's markdown_inline highlights, but
; emphasis glued to a word or a path (`src/tomli/_re.py`, `pkg/__init__.py`, `**/*_test.py`) is
; not emphasis: its underscores and stars stay visible (predicate totem-glued?), and a
; `[shortcut]` without a definition keeps its brackets (`[providers.sim]`, `[100%]`).
(code_span) @markup.raw @nospell

((emphasis) @markup.italic
  (#not-totem-glued? @markup.italic))

((strong_emphasis) @markup.strong
  (#not-totem-glued? @markup.strong))

(strikethrough) @markup.strikethrough

[
  (backslash_escape)
  (hard_line_break)
] @string.escape

((code_span_delimiter) @conceal
  (#set! conceal ""))

((emphasis_delimiter) @conceal
  (#not-totem-glued-emphasis? @conceal)
  (#set! conceal ""))

(inline_link
  [
    "["
    "]"
    "("
    (link_destination)
    ")"
  ] @markup.link
  (#set! conceal ""))

[
  (link_label)
  (link_text)
  (link_title)
  (image_description)
] @markup.link.label

((inline_link
  (link_destination) @_url) @_label
  (#set! @_label url @_url))

[
  (link_destination)
  (uri_autolink)
  (email_autolink)
] @markup.link.url @nospell

(entity_reference) @nospell
