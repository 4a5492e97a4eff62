-- The chat's message input: a small floating Markdown buffer over the bottom of the chat window
-- (or of the editor), so a message may take several lines. It opens in Insert mode; <CR> starts
-- a new line, <C-s> (or <CR> in Normal mode) sends, q or <Esc> in Normal mode cancels. <Tab> after
-- a word that starts with `@` (a file), `#` (`#buffer`, `#selection`, `#diagnostics`) or, at the
-- start of the message, `/` (a slash command) completes it (totem/complete, through `complete`).
local M = {}

M.keys = { send = '<C-s>', cancel = 'q' }
M.current = nil -- { win, buf } of the open input

local MIN_HEIGHT, MAX_HEIGHT = 3, 10

local function close()
  local current = M.current
  M.current = nil
  if current and vim.api.nvim_win_is_valid(current.win) then
    vim.api.nvim_win_close(current.win, true)
  end
  if vim.fn.mode() == 'i' then
    vim.cmd.stopinsert()
  end
end

--- Where the input goes: over the bottom of `anchor` (a window) when it is shown, else of the editor.
local function placement(anchor, height)
  if anchor and vim.api.nvim_win_is_valid(anchor) then
    local width = vim.api.nvim_win_get_width(anchor)
    local rows = vim.api.nvim_win_get_height(anchor)
    return { relative = 'win', win = anchor, row = math.max(0, rows - height - 2), col = 0, width = math.max(10, width - 2), height = height }
  end
  local width = math.max(20, math.floor(vim.o.columns * 0.6))
  return {
    relative = 'editor',
    row = math.max(0, vim.o.lines - height - 4),
    col = math.floor((vim.o.columns - width) / 2),
    width = width,
    height = height,
  }
end

local function fit(win, buf)
  local height = math.min(MAX_HEIGHT, math.max(MIN_HEIGHT, vim.api.nvim_buf_line_count(buf)))
  if vim.api.nvim_win_get_height(win) ~= height then
    vim.api.nvim_win_set_height(win, height)
  end
end

--- Whether the word before the cursor is one totem/complete answers for: `@…`, `#…`, or `/…`
--- at the start of the message.
local function completable(row, lead)
  local word = lead:match('(%S*)$')
  return word:match('^[@#]') ~= nil or (row == 1 and lead:match('^/[%w_.-]*$') ~= nil)
end

--- Completes the word before the cursor of the input `buf` with `complete` (see open); false
--- when there is nothing to complete there.
function M.complete(buf, complete)
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local lead = lines[row]:sub(1, col)
  if not completable(row, lead) then
    return false
  end
  local before = table.concat(vim.list_slice(lines, 1, row - 1), '\n') .. (row > 1 and '\n' or '')
  local text = table.concat(lines, '\n')
  local line_start = #before -- bytes of `text` before the cursor's line
  local position = vim.str_utfindex(before .. lead, 'utf-16')
  complete(text, position, function(result)
    if not result or type(result.items) ~= 'table' or #result.items == 0 then
      return
    end
    -- Still typing in this input, on that line: the items replace the word from `start`.
    if vim.api.nvim_get_current_buf() ~= buf or vim.fn.mode() ~= 'i' or vim.api.nvim_win_get_cursor(0)[1] ~= row then
      return
    end
    local start = vim.str_byteindex(text, 'utf-16', result.start, false) - line_start
    local items = vim.tbl_map(function(item)
      return { word = item.insertText, abbr = item.label, menu = item.detail or item.kind }
    end, result.items)
    vim.fn.complete(start + 1, items)
  end)
  return true
end

--- Opens the input. `opts`: `prompt` (the title), `default` (the text it starts with), `anchor`
--- (a window to sit in), `on_submit(text)` (the lines joined by "\n", trailing blank lines left
--- out; not called for an empty message), `complete(text, position, done)` (the completions at
--- UTF-16 offset `position` of the whole `text`: `done({start, end, items})`, offsets in `text`,
--- items {label, insertText, kind, detail?}; or `done(nil)`).
function M.open(opts)
  close()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  pcall(vim.api.nvim_buf_set_name, buf, 'totem://input')
  vim.bo[buf].filetype = 'markdown'
  local default = opts.default or ''
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(default, '\n', { plain = true }))
  local config = placement(opts.anchor, MIN_HEIGHT)
  config.style = 'minimal'
  config.border = 'rounded'
  config.title = ' ' .. (opts.prompt or 'Totem> ') .. ' '
  config.footer = ' <C-s> send · <CR> new line · q cancel (Normal) '
  config.footer_pos = 'right'
  local win = vim.api.nvim_open_win(buf, true, config)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  M.current = { win = win, buf = buf }
  fit(win, buf)

  local function submit()
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    while #lines > 0 and vim.trim(lines[#lines]) == '' do
      table.remove(lines)
    end
    close()
    local text = table.concat(lines, '\n')
    if vim.trim(text) ~= '' and opts.on_submit then
      opts.on_submit(text)
    end
  end
  local map = function(mode, lhs, fn, desc)
    vim.keymap.set(mode, lhs, fn, { buffer = buf, nowait = true, desc = desc })
  end
  map({ 'n', 'i' }, M.keys.send, submit, 'Totem: send the message')
  map('n', '<CR>', submit, 'Totem: send the message')
  map('n', M.keys.cancel, close, 'Totem: cancel the message')
  map('n', '<Esc>', close, 'Totem: cancel the message')
  map('i', '<Tab>', function()
    if not (opts.complete and M.complete(buf, opts.complete)) then
      vim.api.nvim_feedkeys('\t', 'n', false)
    end
  end, 'Totem: complete a mention or a slash command')
  vim.api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI' }, {
    buffer = buf,
    callback = function()
      if vim.api.nvim_win_is_valid(win) then
        fit(win, buf)
      end
    end,
  })
  -- Leaving the input (another window, the chat) cancels it, as closing a prompt does.
  vim.api.nvim_create_autocmd('WinLeave', {
    buffer = buf,
    once = true,
    callback = function()
      vim.schedule(function()
        if M.current and M.current.buf == buf then
          close()
        end
      end)
    end,
  })
  vim.cmd.startinsert({ bang = true })
end

return M
