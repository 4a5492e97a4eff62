; The chat buffer's injections: markdown's, except that Totem's own paragraphs (a tool call's
; lines, starting "▶ ", with its result, feedback and output; an in-progress todo item "[~] ")
; get no inline Markdown, so paths, commands and output show exactly as they are. A table's cells
; are `totem_chat_cell`: inline Markdown with nothing concealed, so its columns line up as drawn
; (lua/totem/tables.lua counts every character).
(fenced_code_block
  (info_string
    (language) @injection.language)
  (code_fence_content) @injection.content)

((inline) @injection.content
  (#not-lua-match? @injection.content "^▶ ")
  (#not-lua-match? @injection.content "^%[~%] ")
  (#set! injection.language "totem_chat_inline"))

((pipe_table_cell) @injection.content
  (#set! injection.language "totem_chat_cell"))
