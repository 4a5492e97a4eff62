; The chat buffer (lua/totem/markdown.lua): Markdown, highlighted as Neovim's own markdown.
; inherits: markdown
