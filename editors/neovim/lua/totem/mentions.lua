-- The editor's side of a message's mentions (docs/protocol.md, "Mentions"): totem/chat's
-- `editor` for `#buffer`, `#selection` and `#diagnostics` (the selection: the message's own, else
-- the last Visual selection of that file, its marks '< and '>), a notice for a mention that has
-- nothing to name, and what the chat writes under the user's message to say what was attached.
local M = {}

local EDITOR = { '#buffer', '#selection', '#diagnostics' }

--- Whether `word` (`#buffer`, …) stands in `text` as a mention: at the start of a word, not
--- the start of a longer word (`#selections`).
local function mentioned(text, word)
  for from, after in text:gmatch('()' .. word .. '()') do
    local before = from == 1 and '' or text:sub(from - 1, from - 1)
    if (before == '' or before:match('%s')) and not text:sub(after, after):match('[%w_-]') then
      return true
    end
  end
  return false
end

local function is_file(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf) ~= ''
end

--- The last Visual selection of `buf` (its marks '< and '>) as whole lines, an LSP range ending
--- at the start of the line after it; nil when the buffer has none.
function M.last_selection(buf)
  local first = vim.api.nvim_buf_get_mark(buf, '<')[1]
  local last = math.min(vim.api.nvim_buf_get_mark(buf, '>')[1], vim.api.nvim_buf_line_count(buf))
  if first < 1 or last < first then
    return nil
  end
  return { start = { line = first - 1, character = 0 }, ['end'] = { line = last, character = 0 } }
end

--- totem/chat's `editor` for a message `text` that names `#buffer`, `#selection` or
--- `#diagnostics`: the file buffer it is about (`bufnr`, else `fallback`, the file the user was
--- last in), its selection (the message's `context.range` there, else the file's last Visual
--- selection) and its diagnostics (as LSP's) for `#diagnostics`. Second, what the user should be
--- told: a mention that names nothing (no file; `#selection` without a selection). Nil when the
--- message names none.
function M.editor(text, context, bufnr, fallback)
  local named = {}
  for _, word in ipairs(EDITOR) do
    named[word] = mentioned(text, word) or nil
  end
  if not next(named) then
    return nil, nil
  end
  bufnr = is_file(bufnr) and bufnr or (is_file(fallback) and fallback or nil)
  if not bufnr then
    return nil, ('%s: no file to attach; open one first'):format(table.concat(vim.tbl_keys(named), ', '))
  end
  local out = { uri = vim.uri_from_bufnr(bufnr) }
  if context and context.uri == out.uri and context.range then
    out.range = context.range
  elseif named['#selection'] then
    out.range = M.last_selection(bufnr)
  end
  if named['#diagnostics'] then
    out.diagnostics = vim.lsp.diagnostic.from(vim.diagnostic.get(bufnr))
  end
  local problem = nil
  if named['#selection'] and not out.range then
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':~:.')
    problem = ('#selection: %s has no selection to attach; select lines in Visual mode first'):format(name)
  end
  return out, problem
end

--- One attachment as the chat names it: the mention as typed for a file (`@src/app.py#L3-5`),
--- the mention and what it took for the editor's (`#selection src/app.py:3-5`).
local function label(kind, path, lines, mention)
  if kind == 'file' then
    return mention
  end
  local where = path .. (lines and (':%d-%d'):format(lines[1], lines[2]) or '')
  return ('#%s %s'):format(kind, where)
end

--- The attachments of a stored request (its part's `data.attachments`, protocol.md) as the chat
--- names them, but its `context` (shown as a label of its own).
function M.stored(attachments)
  local found = {}
  for _, a in ipairs(type(attachments) == 'table' and attachments or {}) do
    if a.kind ~= 'context' and type(a.path) == 'string' then
      local lines = type(a.lines) == 'table' and a.lines or nil
      table.insert(found, label(a.kind, a.path, lines, a.mention or ('@' .. a.path)))
    end
  end
  return found
end

-- A file mention as the server reads it: `@path`, `@path#L10`, `@path#L10-20`.
local FILE_MENTION = '()@([%w_%./%-]+)(#?L?[%d%-]*)()'

--- What the message `text` attaches, as the server will (M.stored's names): its `@path`
--- mentions of files that are there under `root`, and its editor mentions of `editor` (M.editor;
--- `#selection` only with a range). `relative(uri)`: a path as the chat shows it.
function M.sent(text, editor, root, relative)
  local found, seen = {}, {}
  local function add(name)
    if not seen[name] then
      seen[name] = true
      table.insert(found, name)
    end
  end
  local spots = {}
  for from, path, suffix in text:gmatch(FILE_MENTION) do
    local before = from == 1 and '' or text:sub(from - 1, from - 1)
    local stat = root and (before == '' or before:match('%s')) and vim.uv.fs_stat(root .. '/' .. path)
    if stat and stat.type == 'file' then
      table.insert(spots, { at = from, name = '@' .. path .. (suffix:match('^#L%d+%-?%d*$') and suffix or '') })
    end
  end
  if editor then
    local path = relative(editor.uri)
    for _, word in ipairs(EDITOR) do
      local from = mentioned(text, word) and text:find(word, 1, true)
      if from and (word ~= '#selection' or editor.range) then
        local lines = nil
        if word == '#selection' then
          local first, last = editor.range.start.line, editor.range['end'].line
          if editor.range['end'].character == 0 and last > first then
            last = last - 1
          end
          lines = { first + 1, last + 1 }
        end
        table.insert(spots, { at = from, name = label(word:sub(2), path, lines) })
      end
    end
  end
  table.sort(spots, function(a, b)
    return a.at < b.at
  end)
  for _, spot in ipairs(spots) do
    add(spot.name)
  end
  return found
end

--- The line under the user's message naming what it attached; nil for nothing.
function M.line(names)
  if #names == 0 then
    return nil
  end
  return '*(attached: ' .. table.concat(names, ', ') .. ')*'
end

return M
