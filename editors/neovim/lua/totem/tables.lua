-- Markdown pipe tables (GFM: a header row, a `|---|` delimiter row, body rows) fitted to the
-- chat window's width. A table wider than the window would wrap mid-row, its columns lost; it
-- is drawn again with narrower columns, each cell's words wrapped inside its column onto
-- continuation lines (`| … |` rows whose other cells are blank), and a rule row (`| ─── |`)
-- between the rows that take several lines, so a row's end can be seen. The rule is no
-- delimiter row: a `|---|` there would make the row above it the header of another table (drawn
-- bold). An inline code span is kept whole on a line, or, longer than its column, cut into
-- pieces that are each a code span. The result is still one pipe table, for treesitter's
-- Markdown; its cells are drawn with nothing concealed (markdown.lua), so the widths counted
-- here are the widths shown. A table that fits stays as the model wrote it.
local M = {}

local width_of = vim.fn.strdisplaywidth

local DELIMITER_CELL = '^%s*:?%-+:?%s*$'

--- The cells of a table row (split at unescaped `|`, the outer pipes dropped), trimmed.
local function cells(line)
  local text = vim.trim(line)
  text = text:gsub('^|', '')
  if text:sub(-1) == '|' and text:sub(-2, -2) ~= '\\' then
    text = text:sub(1, -2)
  end
  local found, start, i = {}, 1, 1
  while i <= #text do
    local char = text:sub(i, i)
    if char == '\\' then
      i = i + 1 -- `\|` is a pipe inside the cell
    elseif char == '|' then
      table.insert(found, vim.trim(text:sub(start, i - 1)))
      start = i + 1
    end
    i = i + 1
  end
  table.insert(found, vim.trim(text:sub(start)))
  return found
end

local function is_row(line)
  return line ~= nil and line:find('|', 1, true) ~= nil and vim.trim(line) ~= ''
end

local function is_delimiter(line)
  if not is_row(line) then
    return false
  end
  for _, cell in ipairs(cells(line)) do
    if not cell:match(DELIMITER_CELL) then
      return false
    end
  end
  return true
end

--- The display width of each column at most `room` in all: the widest column is narrowed a
--- column at a time (at least 1). Nil when the columns cannot fit at all.
local function column_widths(rows, room)
  local widths = {}
  for _, row in ipairs(rows) do
    for c, cell in ipairs(row) do
      widths[c] = math.max(widths[c] or 1, width_of(cell))
    end
  end
  local total = 0
  for _, w in ipairs(widths) do
    total = total + w
  end
  if #widths > room then
    return nil
  end
  while total > room do
    local widest = 1
    for c, w in ipairs(widths) do
      if w > widths[widest] then
        widest = c
      end
    end
    widths[widest] = widths[widest] - 1
    total = total - 1
  end
  return widths
end

--- The words of a cell's `text`: split at spaces, except inside an inline code span.
local function words(text)
  local found, i, word = {}, 1, ''
  while i <= #text do
    local ticks = text:match('^`+', i)
    local close = ticks and text:find(ticks, i + #ticks, true)
    if close then
      word = word .. text:sub(i, close + #ticks - 1)
      i = close + #ticks
    elseif text:sub(i, i):match('%s') then
      if word ~= '' then
        table.insert(found, word)
      end
      word, i = '', i + 1
    else
      word, i = word .. (ticks or text:sub(i, i)), i + (ticks and #ticks or 1)
    end
  end
  if word ~= '' then
    table.insert(found, word)
  end
  return found
end

--- The first piece of `word` at most `width` display cells wide: cut after its last `/`, `_`,
--- `-` or `,` that fits, else anywhere.
local function cut_piece(word, width)
  local cut = vim.fn.strcharpart(word, 0, width)
  while width_of(cut) > width and #cut > 1 do
    cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - 1)
  end
  -- A path or a name is cut after a separator when one is there: `totem_` `engine/` `loop.py`.
  local after = cut:match('^.*[/_%-,]()')
  if after and after > 2 and after <= #cut then
    cut = cut:sub(1, after - 1)
  end
  return cut
end

--- A word longer than `width` cut into pieces; a word that is one code span (`` `name` ``) into
--- code spans, each piece in backticks of its own.
local function cut_word(word, width)
  local ticks, inner = word:match('^(`+)([^`].-[^`]?)%1$')
  local pieces = {}
  if ticks and width > 2 * #ticks then
    while width_of(inner) > width - 2 * #ticks do
      local cut = cut_piece(inner, width - 2 * #ticks)
      table.insert(pieces, ticks .. cut .. ticks)
      inner = inner:sub(#cut + 1)
    end
    if inner ~= '' then
      table.insert(pieces, ticks .. inner .. ticks)
    end
    return pieces
  end
  while width_of(word) > width do
    local cut = cut_piece(word, width)
    table.insert(pieces, cut)
    word = word:sub(#cut + 1)
  end
  if word ~= '' then
    table.insert(pieces, word)
  end
  return pieces
end

--- `text` cut into pieces of at most `width` display cells: at spaces (not inside a code span);
--- a word longer than the width cut where it must (cut_word). At least one piece ('' for an
--- empty cell).
local function wrap(text, width)
  local pieces, current = {}, ''
  for _, whole in ipairs(words(text)) do
    local parts = width_of(whole) > width and cut_word(whole, width) or { whole }
    for _, word in ipairs(parts) do
      if current == '' then
        current = word
      elseif width_of(current) + 1 + width_of(word) <= width then
        current = current .. ' ' .. word
      else
        table.insert(pieces, current)
        current = word
      end
    end
  end
  table.insert(pieces, current)
  return pieces
end

local function pad(text, width)
  return text .. string.rep(' ', width - width_of(text))
end

--- The lines of one table row, its cells wrapped into `widths`.
local function row_lines(row, widths)
  local wrapped, height = {}, 1
  for c, w in ipairs(widths) do
    wrapped[c] = wrap(row[c] or '', w)
    height = math.max(height, #wrapped[c])
  end
  local lines = {}
  for l = 1, height do
    local parts = {}
    for c, w in ipairs(widths) do
      table.insert(parts, pad(wrapped[c][l] or '', w))
    end
    table.insert(lines, '| ' .. table.concat(parts, ' | ') .. ' |')
  end
  return lines
end

--- The delimiter row for `widths`, keeping each column's alignment colons from `delimiter`.
local function delimiter_line(delimiter, widths)
  local parts = {}
  for c, w in ipairs(widths) do
    local cell = delimiter[c] or '-'
    local left, right = cell:sub(1, 1) == ':', cell:sub(-1) == ':'
    local dashes = string.rep('-', w + 2 - (left and 1 or 0) - (right and 1 or 0))
    table.insert(parts, (left and ':' or '') .. dashes .. (right and ':' or ''))
  end
  return '|' .. table.concat(parts, '|') .. '|'
end

--- The line between two rows of which one takes several lines: a row of `─` (no delimiter
--- row, see the top).
local function rule_line(widths)
  local parts = {}
  for _, w in ipairs(widths) do
    table.insert(parts, string.rep('─', w))
  end
  return '| ' .. table.concat(parts, ' | ') .. ' |'
end

--- The table `source` (its lines: header, delimiter, rows) drawn in at most `width` display
--- cells a line; nil when it fits as it is or cannot be made to.
local function fit(source, width)
  local fits = true
  for _, line in ipairs(source) do
    fits = fits and width_of(line) <= width
  end
  if fits then
    return nil
  end
  local rows, count = {}, 0
  for i, line in ipairs(source) do
    if i ~= 2 then
      table.insert(rows, cells(line))
      count = math.max(count, #rows[#rows])
    end
  end
  -- `| ` before each cell, ` ` after it, `|` at the end.
  local widths = column_widths(rows, width - 3 * count - 1)
  if not widths then
    return nil
  end
  for c = #widths + 1, count do
    widths[c] = 1
  end
  local rule = rule_line(widths)
  local out = row_lines(rows[1], widths)
  table.insert(out, delimiter_line(cells(source[2]), widths))
  local previous_tall = false
  for r = 2, #rows do
    local lines = row_lines(rows[r], widths)
    if r > 2 and (previous_tall or #lines > 1) then
      table.insert(out, rule)
    end
    vim.list_extend(out, lines)
    previous_tall = #lines > 1
  end
  return out
end

--- `lines` with each complete table wider than `width` drawn to fit it (see the top), and the
--- tables so drawn: a list of {first, last, source} (`first`..`last`: its lines in the result;
--- `source`: its lines as written). A table is complete when a whole line follows its last row
--- (`lines`' last line may still be growing while an answer streams), or when `final`.
--- `skip[i]`: line i is in a code block.
function M.fit_all(lines, width, final, skip)
  if not width or width < 1 then
    return lines, {}
  end
  local out, fitted, i = {}, {}, 1
  while i <= #lines do
    local line = lines[i]
    if not skip[i] and not skip[i + 1] and is_row(line) and is_delimiter(lines[i + 1])
      and #cells(line) == #cells(lines[i + 1]) then
      local last = i + 1
      while not skip[last + 1] and is_row(lines[last + 1]) do
        last = last + 1
      end
      local complete = final or last < #lines - 1
      local source = { unpack(lines, i, last) }
      local drawn = complete and fit(source, width)
      if drawn then
        table.insert(fitted, { first = #out + 1, last = #out + #drawn, source = source })
      end
      vim.list_extend(out, drawn or source)
      i = last + 1
    else
      table.insert(out, line)
      i = i + 1
    end
  end
  return out, fitted
end

return M
