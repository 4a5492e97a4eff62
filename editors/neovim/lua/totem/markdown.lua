-- The chat's Markdown: treesitter highlighting when Neovim has the markdown parsers (0.11 ships
-- them), and the model's text as the chat shows it (its headings below the speaker headings).
--
-- The chat is parsed as `totem_chat`, Neovim's markdown parser under a name of its own, so its
-- queries (editors/neovim/queries/totem_chat*) can differ from markdown's without touching other
-- Markdown buffers: Totem's own tool paragraphs get no inline Markdown, and emphasis glued to a
-- word or a path is not concealed (tree-sitter-markdown would hide the `_` of `src/tomli/_re.py`),
-- and a table's cells (`totem_chat_cell`) conceal nothing, so a table lines up as it is drawn.
local tables = require('totem.tables')

local M = {}

local registered = nil -- true/false once tried

--- Whether the character `text` continues a word or a path.
local function word_char(text)
  return text ~= '' and text:match('[%w/%._%*~%-]') ~= nil
end

--- An emphasis node glued to what surrounds it: a path or a word, not emphasis.
local function glued(node, source)
  local sr, sc, er, ec = node:range()
  local first = vim.api.nvim_buf_get_lines(source, sr, sr + 1, false)[1] or ''
  local last = er == sr and first or (vim.api.nvim_buf_get_lines(source, er, er + 1, false)[1] or '')
  local before = sc > 0 and first:sub(sc, sc) or ''
  local after, beyond = last:sub(ec + 1, ec + 1), last:sub(ec + 2, ec + 2)
  if word_char(before) then
    return true
  end
  -- After: a word or path goes on (`_init_.py`); a sentence's full stop does not (`**this**.`).
  return after:match('[%w/_%*~]') ~= nil or (after:match('[%.%-]') ~= nil and beyond:match('%w') ~= nil)
end

local EMPHASIS = { emphasis = true, strong_emphasis = true, strikethrough = true }

local function nodes(match, id)
  local found = match[id]
  if type(found) == 'table' then
    return found
  end
  return { found }
end

local function register()
  if registered ~= nil then
    return registered
  end
  registered = false
  local block = vim.api.nvim_get_runtime_file('parser/markdown.so', false)[1]
  local inline = vim.api.nvim_get_runtime_file('parser/markdown_inline.so', false)[1]
  if not block or not inline then
    return false
  end
  local ok = pcall(vim.treesitter.language.add, 'totem_chat', { path = block, symbol_name = 'markdown' })
    and pcall(vim.treesitter.language.add, 'totem_chat_inline', { path = inline, symbol_name = 'markdown_inline' })
    and pcall(vim.treesitter.language.add, 'totem_chat_cell', { path = inline, symbol_name = 'markdown_inline' })
  if not ok then
    return false
  end
  vim.treesitter.query.add_predicate('totem-glued?', function(match, _, source, predicate)
    for _, node in ipairs(nodes(match, predicate[2])) do
      if glued(node, source) then
        return true
      end
    end
    return false
  end, { force = true })
  vim.treesitter.query.add_predicate('totem-glued-emphasis?', function(match, _, source, predicate)
    for _, node in ipairs(nodes(match, predicate[2])) do
      local parent = node:parent()
      while parent and not EMPHASIS[parent:type()] do
        parent = parent:parent()
      end
      if parent and glued(parent, source) then
        return true
      end
    end
    return false
  end, { force = true })
  registered = true
  return true
end

--- Starts treesitter highlighting of the chat buffer; false (and nothing done) when Neovim has
--- no markdown parser, so the caller keeps the regex syntax.
function M.attach(buf)
  if not register() then
    return false
  end
  return pcall(vim.treesitter.start, buf, 'totem_chat')
end

--- Whether the chat buffer is highlighted by treesitter.
function M.active(buf)
  local ok, highlighter = pcall(function()
    return vim.treesitter.highlighter.active[buf]
  end)
  return ok and highlighter ~= nil
end

local SPEAKER_LEVEL = 2 -- `## You`, `## Totem`

--- The lines of the model's Markdown `text` as the chat shows them: an ATX heading is moved two
--- levels down (`## Findings` becomes `#### Findings`, at most `######`), so it sits below the
--- speaker headings; lines inside fenced code blocks are left alone (`# comment`). With
--- `fit = {width, final}`, a complete table wider than `width` display cells is drawn to fit it
--- (tables.lua; `final`: the text is all there, so a table at its end is complete); then the
--- tables drawn so are returned second (tables.fit_all).
function M.lines(text, fit)
  local lines = vim.split(text, '\n', { plain = true })
  local fence = nil -- { char, length } of the open fence
  local code = {} -- code[i]: line i is a fence or inside one
  for i, line in ipairs(lines) do
    local indent, run = line:match('^( ? ? ?)([`~][`~][`~]+)')
    if run and (run:match('^`+$') or run:match('^~+$')) then
      local char, length = run:sub(1, 1), #run
      code[i] = true
      if not fence then
        fence = { char = char, length = length }
      elseif char == fence.char and length >= fence.length and line:sub(#indent + length + 1):match('^%s*$') then
        fence = nil
      end
    elseif fence then
      code[i] = true
    else
      local lead, hashes, rest = line:match('^( ? ? ?)(#+)(.*)$')
      if hashes and #hashes <= 6 and (rest == '' or rest:match('^%s')) then
        lines[i] = lead .. string.rep('#', math.min(6, #hashes + SPEAKER_LEVEL)) .. rest
      end
    end
  end
  if fit then
    return tables.fit_all(lines, fit.width, fit.final, code)
  end
  return lines, {}
end

return M
