-- A proposed file change (totem/permission's `proposed`, docs/protocol.md) reviewed hunk by hunk:
-- each file's hunks between its text now and the proposal (vim.diff), each taken or left, or
-- the proposal edited by the user; what is accepted is the whole text of each file with the
-- taken hunks applied (totem/permission's `accepted`). permission.lua shows it and asks.
local M = {}

local CONTEXT = 2 -- unchanged lines shown around a hunk

--- `text` as lines that keep their line ending (the last one may have none), as vim.diff
--- counts them.
local function lines_of(text)
  local out, start = {}, 1
  while start <= #text do
    local newline = text:find('\n', start, true)
    if not newline then
      table.insert(out, text:sub(start))
      break
    end
    table.insert(out, text:sub(start, newline))
    start = newline + 1
  end
  return out
end

local function shown(line)
  return (line:gsub('\r?\n$', ''))
end

--- The text of the file at `uri` as the server sees it: its loaded buffer (the lines with the
--- buffer's line ending, and one after the last unless 'noeol'), else the disk; '' when it does
--- not exist yet.
function M.current_text(uri)
  local name = vim.uri_to_fname(uri)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.api.nvim_buf_get_name(bufnr) == name then
      local ending = ({ dos = '\r\n', mac = '\r' })[vim.bo[bufnr].fileformat] or '\n'
      local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, true), ending)
      if vim.bo[bufnr].eol then
        text = text .. ending
      end
      return text
    end
  end
  local file = io.open(name, 'rb')
  if not file then
    return ''
  end
  local text = file:read('*a') or ''
  file:close()
  return text
end

--- The first line (1-based) a hunk replaces in `a`, or inserts before: vim.diff gives the
--- line after which it inserts when it replaces none.
local function first_a(hunk)
  return hunk.a_count > 0 and hunk.a_start or hunk.a_start + 1
end

local function first_b(hunk)
  return hunk.b_count > 0 and hunk.b_start or hunk.b_start + 1
end

--- Sets what the file is to become (the proposal, or the user's edit of it): its hunks against
--- the original, all taken.
function M.set_target(file, text)
  file.target = text
  file.b = lines_of(text)
  file.hunks = {}
  local indices = vim.diff(file.original, text, { result_type = 'indices' }) or {}
  for _, h in ipairs(indices) do
    table.insert(file.hunks, { a_start = h[1], a_count = h[2], b_start = h[3], b_count = h[4], taken = true })
  end
end

--- One file of the change: `uri`, `path` (as shown), `proposed` (its whole new text).
function M.file(uri, path, proposed)
  local file = { uri = uri, path = path, proposed = proposed, edited = false }
  file.original = M.current_text(uri)
  file.a = lines_of(file.original)
  M.set_target(file, proposed)
  return file
end

--- The file's text with its taken hunks applied and the others left as they were.
function M.accepted_text(file)
  local out, next_a = {}, 1
  for _, hunk in ipairs(file.hunks) do
    local first = first_a(hunk)
    for i = next_a, first - 1 do
      table.insert(out, file.a[i])
    end
    if hunk.taken then
      for i = first_b(hunk), first_b(hunk) + hunk.b_count - 1 do
        table.insert(out, file.b[i])
      end
    else
      for i = first, first + hunk.a_count - 1 do
        table.insert(out, file.a[i])
      end
    end
    next_a = first + hunk.a_count
  end
  for i = next_a, #file.a do
    table.insert(out, file.a[i])
  end
  return table.concat(out)
end

local function taken(file)
  local n = 0
  for _, hunk in ipairs(file.hunks) do
    n = n + (hunk.taken and 1 or 0)
  end
  return n
end

--- Whether the user changed anything of the proposal (a hunk left, a file edited).
function M.changed(files)
  for _, file in ipairs(files) do
    if file.edited or taken(file) < #file.hunks then
      return true
    end
  end
  return false
end

--- totem/permission's `accepted`: every file's whole accepted text.
function M.accepted(files)
  return vim.tbl_map(function(file)
    return { uri = file.uri, text = M.accepted_text(file) }
  end, files)
end

--- One line a file: what the user took of it, for the chat.
function M.describe(files)
  local lines = {}
  for _, file in ipairs(files) do
    local n, count = taken(file), #file.hunks
    local what
    if file.edited then
      what = count == n and 'edited by you' or ('edited by you, %d of %d hunks taken'):format(n, count)
    elseif n == count then
      what = 'taken as proposed'
    elseif n == 0 then
      what = 'left as it was'
    else
      what = ('took %d of %d hunks'):format(n, count)
    end
    table.insert(lines, ('Reviewed %s: %s'):format(file.path, what))
  end
  return lines
end

--- The diff shown for review, per file `--- a/path`, `+++ b/path` and each hunk (its header,
--- a few lines around it, what it removes and adds). Returns the lines and, for each hunk, its
--- rows: {row = its header's (0-based), last = its last row, file, hunk}; and each file's
--- header row.
function M.render(files)
  local lines, hunks, headers = {}, {}, {}
  for _, file in ipairs(files) do
    headers[file] = #lines
    table.insert(lines, '--- a/' .. file.path)
    table.insert(lines, '+++ b/' .. file.path)
    for _, hunk in ipairs(file.hunks) do
      local entry = { row = #lines, file = file, hunk = hunk }
      table.insert(lines, ('@@ -%d,%d +%d,%d @@'):format(hunk.a_start, hunk.a_count, hunk.b_start, hunk.b_count))
      local first = first_a(hunk)
      for i = math.max(1, first - CONTEXT), first - 1 do
        table.insert(lines, ' ' .. shown(file.a[i]))
      end
      for i = first, first + hunk.a_count - 1 do
        table.insert(lines, '-' .. shown(file.a[i]))
      end
      for i = first_b(hunk), first_b(hunk) + hunk.b_count - 1 do
        table.insert(lines, '+' .. shown(file.b[i]))
      end
      for i = first + hunk.a_count, math.min(#file.a, first + hunk.a_count + CONTEXT - 1) do
        table.insert(lines, ' ' .. shown(file.a[i]))
      end
      entry.last = #lines - 1
      table.insert(hunks, entry)
    end
  end
  return lines, hunks, headers
end

return M
