; A table cell of the chat (lua/totem/markdown.lua, lua/totem/tables.lua): the chat's inline
; Markdown highlights (totem_chat_inline) with nothing concealed. A table drawn to fit the window
; pads its cells by every character they hold; a concealed backtick or star would leave its
; column short, out of line with the rows above and below.
(code_span) @markup.raw @nospell

((emphasis) @markup.italic
  (#not-totem-glued? @markup.italic))

((strong_emphasis) @markup.strong
  (#not-totem-glued? @markup.strong))

(strikethrough) @markup.strikethrough

(backslash_escape) @string.escape

[
  (link_label)
  (link_text)
  (link_title)
  (image_description)
] @markup.link.label

[
  (link_destination)
  (uri_autolink)
  (email_autolink)
] @markup.link.url @nospell
