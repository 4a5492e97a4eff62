-- The chats: one markdown buffer a session (`totem://chat`, `totem://chat/2`, …), the current
-- one shown in a split. Each renders its session's `totem/event` notifications (docs/events.md)
-- as they stream, whichever chat is shown, and sends its `totem/chat` requests.
local client = require('totem.client')
local input = require('totem.input')
local attachments = require('totem.attachments')
local mentions = require('totem.mentions')
local markdown = require('totem.markdown')
local results = require('totem.results')
local subagent = require('totem.subagent')
local queue = require('totem.queue')

local M = {}

local ns = vim.api.nvim_create_namespace('totem.chat') -- tool lines, step starts
local REASONING = '> *Reasoning*'
local CALL = '▶ '
M.YOU, M.TOTEM = '## You', '## Totem'
M.VARIANT = '*Answer %d of %d: `[v` and `]v` switch.*'

--- A chat's state. Every function of this module works on `state`, the chat being drawn or
--- sent from (`with`); at rest it is `M.state`, the current chat (the one shown).
local function new_chat(n)
  return {
    n = n, -- its number: the buffer is totem://chat, totem://chat/2, …
    buf = nil,
    client_id = nil,
    root = nil, -- the server's root (a restarted server of the same root takes the chat up)
    session = nil, -- the session shown (and continued by the next message)
    pending = false, -- a totem/chat for a new session is waiting for its turnStart
    request_id = nil,
    busy = false,
    part = nil, -- {kind, id} of the part being streamed
    last = nil, -- kind of the last block written: user, text, reasoning, tool, note, sign
    last_message = nil, -- {text, context, bufnr} of the message last sent from this chat
    retry = nil, -- when the session's last turn failed: {cut = extmark where it starts, message?}
    step_mark = nil, -- extmark where the current step's output starts
    calls = {}, -- callId -> extmark on its tool line
    commands = {}, -- callId -> the command line shown under a bash call's result (results.lua)
    texts = {}, -- the answer's text parts that may hold a table (finish_part), fitted on resize
    todos = nil,
    model = nil,
    mode = nil, -- the session's mode (build, plan) when known
    context = nil, -- the last `context` event: {estimate, window, breakdown}
    wanted = {}, -- {mode?, model?} chosen before the chat had a session: its first turn's
    attachments = {}, -- images for the next message (:TotemAttach): attachments.lua's items
    queued = {}, -- messages sent while a turn runs, sent as it ends (queue.lua)
    title = nil, -- the session's title (its first message), named in its permission questions
  }
end

M.chats = { new_chat(1) } -- every chat of this Neovim, in the order they were made
M.state = M.chats[1]
local state = M.state

--- Runs `fn(...)` with `chat` as the chat worked on, then goes back to the current chat.
local function with(chat, fn, ...)
  state = chat
  local ok, result = pcall(fn, ...)
  state = M.state
  if not ok then
    error(result, 0)
  end
  return result
end
M.with = with

function M.add_chat()
  local chat = new_chat(#M.chats + 1)
  table.insert(M.chats, chat)
  return chat
end

--- The chat of `session`, if one shows it.
function M.chat_of(session)
  for _, chat in ipairs(M.chats) do
    if session and chat.session == session then
      return chat
    end
  end
end

--- The chat whose buffer is `buf`, if any.
function M.chat_of_buf(buf)
  for _, chat in ipairs(M.chats) do
    if chat.buf == buf then
      return chat
    end
  end
end

-- The file buffer the user was last in: what `#buffer`, `#selection` and `#diagnostics` name
-- when a message is typed in the chat.
M.last_file_buf = nil
vim.api.nvim_create_autocmd('BufEnter', {
  group = vim.api.nvim_create_augroup('totem.chat', { clear = true }),
  callback = function(args)
    if vim.bo[args.buf].buftype == '' and vim.api.nvim_buf_get_name(args.buf) ~= '' then
      M.last_file_buf = args.buf
    end
  end,
})

-- A chat window that changes width, or a chat shown in a window: its tables fitted again.
vim.api.nvim_create_autocmd({ 'WinResized', 'BufWinEnter' }, {
  group = 'totem.chat',
  callback = function(args)
    local resized = args.event == 'WinResized' and (vim.v.event.windows or {}) or {}
    local shown = args.event == 'BufWinEnter' and M.chat_of_buf(args.buf) ~= nil
    for _, win in ipairs(resized) do
      shown = shown or (vim.api.nvim_win_is_valid(win) and M.chat_of_buf(vim.api.nvim_win_get_buf(win)) ~= nil)
    end
    if shown then
      vim.schedule(M.refit)
    end
  end,
})

local function options()
  return require('totem').options or require('totem').defaults
end

-- Buffer ----------------------------------------------------------------------------------

local function starts(line, prefix)
  return line:sub(1, #prefix) == prefix
end

--- The fold level of the call whose `▶` line is `lnum`: 2 (closed) when it worked, 1 (open)
--- when it did not (results.failed), 0 while it has no result (it runs, or it shows a todo list
--- that stays in sight).
local function call_level(lnum)
  local below = lnum + 1
  while starts(vim.fn.getline(below), subagent.PREFIX) do
    below = below + 1
  end
  local result = vim.fn.getline(below)
  if not results.is_result(result) then
    return 0
  end
  return results.failed(result) and 1 or 2
end

--- Folds. The window's foldlevel is 1: level-2 folds and deeper are closed, level 1 open.
--- - A tool call (its `▶` line, its result, feedback and what it printed) is a fold: closed to
---   one line when it worked, open when it did not (an error, a denial, an interruption, a
---   non-zero exit).
--- - Inside it, a command's output (results.lua) and a sub-agent's block (subagent.lua: its
---   lines start with subagent.PREFIX) are folds of their own, closed; a failed command's output
---   is open with its call.
--- - A "> *Reasoning*" line opens a closed fold that the following "> " lines continue (a quote
---   in an answer, after a blank line, is not folded).
function M.foldexpr(lnum)
  local line = vim.fn.getline(lnum)
  local prefix = subagent.PREFIX
  if starts(line, prefix) then
    if starts(vim.fn.getline(lnum - 1), prefix) then
      return '='
    end
    return '>' .. (math.max(1, call_level(lnum - 1)) + 1)
  elseif starts(line, CALL) then
    local level = call_level(lnum)
    return level == 0 and '0' or ('>' .. level)
  elseif results.is_output(line) then
    local above = vim.fn.getline(lnum - 1)
    if results.is_command(above) then
      above = vim.fn.getline(lnum - 2) -- the result line, above the command
    end
    if results.is_output(above) or results.failed(above) then
      return '='
    end
    return '>3'
  elseif starts(line, '    ') then
    -- A result, feedback or review line: its call's fold, also after a sub-agent's block.
    local above = lnum - 1
    while starts(vim.fn.getline(above), prefix) do
      above = above - 1
    end
    if above < lnum - 1 and starts(vim.fn.getline(above), CALL) then
      return tostring(call_level(above))
    end
    return '='
  elseif starts(line, REASONING) then
    return '>2'
  elseif line:sub(1, 1) == '>' then
    return '='
  end
  return '0'
end

--- Paths and code are shown as they are. Vim's markdown syntax takes an underscore after a
--- non-word character (`src/tomli/_re.py`) or a star before one (`**/*.py`) for the start of
--- emphasis and conceals it, so `src/tomli/_re.py` showed as `src/tomli/re.py`. These rules,
--- added after it, win over it: Totem's own lines after their marker (a tool call and its
--- result, a note, a todo item) and, in the answer, a word that is a path or a file name (it
--- holds a `/` or a `.` before a letter) stay plain text. Markdown elsewhere, and a path in
--- backticks, is left to the markdown syntax. They are for a Neovim without the markdown
--- parser: with it, the chat is highlighted by treesitter (markdown.lua), whose queries keep
--- the same lines verbatim.
local VERBATIM = [[
  syntax match totemAgentLine /^  │ .*$/
  syntax match totemToolLine /^▶ .*$/
  syntax match totemToolResult /^    [✓✗⊘…·] .*$/
  syntax match totemToolOutput /^    │ .*$/
  syntax match totemFeedback /^    Your feedback: .*$/
  syntax match totemNoteText /\%(^\*\*\%(Note\|Error\|Fix\):\*\* \)\@<=.*$/
  syntax match totemNoteText /\%(^\*\*Error\*\* ([^)]*): \)\@<=.*$/
  syntax match totemTodoText /\%(^- \[[ x~]\] \)\@<=.*$/
  syntax match totemPath /\%(^\|[[:space:](\["']\)\@<=[[:alnum:]_.~\/*-]*\%(\/\|\.\a\)[[:alnum:]_.~\/*-]*/
]]

function M.buf()
  if state.buf and vim.api.nvim_buf_is_valid(state.buf) then
    return state.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, state.n == 1 and 'totem://chat' or ('totem://chat/' .. state.n))
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  -- Each time the markdown syntax is (re)loaded for the chat, after it.
  vim.api.nvim_create_autocmd('Syntax', {
    buffer = buf,
    callback = function(args)
      vim.api.nvim_buf_call(args.buf, function()
        vim.cmd(VERBATIM)
      end)
    end,
  })
  vim.api.nvim_create_autocmd('TextYankPost', {
    buffer = buf,
    callback = function(args)
      M.on_yank(args.buf)
    end,
  })
  vim.bo[buf].filetype = 'markdown'
  markdown.attach(buf) -- treesitter Markdown when Neovim has the parser; else the syntax above
  vim.bo[buf].modifiable = false
  state.buf = buf
  local map = function(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = desc })
  end
  map('i', function()
    M.prompt()
  end, 'Totem: send a message')
  map('<CR>', function()
    M.prompt()
  end, 'Totem: send a message')
  map('q', function()
    M.close()
  end, 'Totem: close the chat')
  map('<C-c>', function()
    M.abort()
  end, 'Totem: stop the turn')
  map('r', function()
    M.retry()
  end, 'Totem: send the failed message again')
  map(']v', function()
    require('totem.conversation').switch_variant(1)
  end, 'Totem: the next answer to this message')
  map('[v', function()
    require('totem.conversation').switch_variant(-1)
  end, 'Totem: the previous answer to this message')
  return buf
end

--- The windows that show this chat.
local function windows()
  local buf = state.buf
  if not buf then
    return {}
  end
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_buf(win) == buf
  end, vim.api.nvim_list_wins())
end

--- The windows that show any chat.
local function chat_windows()
  return vim.tbl_filter(function(win)
    return M.chat_of_buf(vim.api.nvim_win_get_buf(win)) ~= nil
  end, vim.api.nvim_list_wins())
end

local function setup_window(win)
  local wo = vim.wo[win]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = 'no'
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'totem.chat'.foldexpr(v:lnum)"
  wo.foldtext = "v:lua.require'totem.chat'.foldtext()"
  wo.foldlevel = 1 -- see foldexpr: calls that worked, reasoning, sub-agents and output closed
  wo.foldenable = true
  wo.conceallevel = 2
end

local attachments_ns = vim.api.nvim_create_namespace('totem.attachments')
vim.api.nvim_set_hl(0, 'TotemAttachment', { link = 'Special', default = true })

--- The chat's pending attachments, virtual lines under its last line (where the input opens),
--- drawn again after every change so that they stay last.
local function draw_attachments(buf)
  vim.api.nvim_buf_clear_namespace(buf, attachments_ns, 0, -1)
  if #state.attachments == 0 then
    return
  end
  local virt_lines = vim.tbl_map(function(item)
    return { { attachments.label(item), 'TotemAttachment' } }
  end, state.attachments)
  local row = vim.api.nvim_buf_line_count(buf) - 1
  vim.api.nvim_buf_set_extmark(buf, attachments_ns, row, 0, { virt_lines = virt_lines })
end

local function edit(fn)
  local buf = M.buf()
  -- Windows that follow the end keep following it.
  local follow = {}
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(windows()) do
    follow[win] = vim.api.nvim_win_get_cursor(win)[1] >= count
  end
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn, buf)
  vim.bo[buf].modifiable = false
  draw_attachments(buf)
  queue.draw(state, buf)
  vim.bo[buf].modified = false
  count = vim.api.nvim_buf_line_count(buf)
  for win, yes in pairs(follow) do
    if yes and vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_set_cursor(win, { count, 0 })
    end
  end
  if not ok then
    error(err)
  end
end

local function last_row(buf)
  return vim.api.nvim_buf_line_count(buf) - 1
end

local function is_empty(buf)
  return vim.api.nvim_buf_line_count(buf) == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
end

--- Appends whole lines after the last one (replacing it when it is empty).
local function append_lines(buf, lines)
  local row = last_row(buf)
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
  if line == '' then
    vim.api.nvim_buf_set_text(buf, row, 0, row, 0, lines)
  else
    vim.api.nvim_buf_set_lines(buf, row + 1, row + 1, false, lines)
  end
end

local finish_part -- below: the part being streamed is over

--- Starts a block on a fresh line (the part streamed so far is over); `gap`: after a blank line.
local function open_block(buf, kind, gap)
  finish_part(buf)
  if not is_empty(buf) then
    local row = last_row(buf)
    local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
    if line ~= '' then
      vim.api.nvim_buf_set_lines(buf, row + 1, row + 1, false, gap and { '', '' } or { '' })
    elseif gap and row > 0 and vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1] ~= '' then
      vim.api.nvim_buf_set_lines(buf, row + 1, row + 1, false, { '' })
    end
  end
  state.last = kind
end

-- Window ----------------------------------------------------------------------------------

function M.is_open()
  return #windows() > 0
end

--- Opens the chat in a split (focus it when `focus`), or in the window of another chat; returns
--- the window.
function M.open(focus)
  local buf = M.buf()
  local existing = windows()[1]
  if not existing then
    existing = chat_windows()[1]
    if existing then
      vim.api.nvim_win_set_buf(existing, buf)
      setup_window(existing)
      M.update_winbar()
    end
  end
  if existing then
    if focus then
      vim.api.nvim_set_current_win(existing)
    end
    return existing
  end
  local cfg = options().chat or {}
  local position = cfg.position or 'right'
  local vertical = position == 'right' or position == 'left'
  local total = vertical and vim.o.columns or vim.o.lines
  local size = cfg.size or 0.4
  if size <= 1 then
    size = math.max(20, math.floor(total * size))
  end
  local split = ({ right = 'right', left = 'left', top = 'above', bottom = 'below' })[position] or 'right'
  local win = vim.api.nvim_open_win(buf, focus and true or false, {
    split = split,
    win = -1,
    width = vertical and size or nil,
    height = (not vertical) and size or nil,
  })
  setup_window(win)
  M.update_winbar()
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  return win
end

--- Makes `chat` the current one; the chat window, when open, shows it.
function M.show(chat)
  M.state = chat
  state = chat
  local buf = M.buf()
  for _, win in ipairs(chat_windows()) do
    if vim.api.nvim_win_get_buf(win) ~= buf then
      vim.api.nvim_win_set_buf(win, buf)
      setup_window(win)
    end
  end
  M.update_winbar()
end

--- Whether a chat has nothing in it and no session: a new message may start one there.
local function unused(chat)
  if chat.session or chat.busy or chat.pending then
    return false
  end
  return not chat.buf or not vim.api.nvim_buf_is_valid(chat.buf) or is_empty(chat.buf)
end

--- A chat with no session (the current one when it is unused, else a new one), made current.
function M.new()
  local chat = unused(M.state) and M.state or M.add_chat()
  M.show(chat)
  return chat
end

function M.close()
  for _, win in ipairs(chat_windows()) do
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, false)
    end
  end
end

function M.toggle()
  if M.is_open() then
    M.close()
  else
    M.open(true)
  end
end

local function tokens(n)
  if n < 1000 then
    return tostring(n)
  end
  return ('%.1fk'):format(n / 1000)
end

--- The context line: "2.4k/32.8k (7%)" (used / window, in tokens), from the session's last
--- `context` event; "2.4k tokens" when the window is not known.
function M.context_line(context)
  if type(context) ~= 'table' or type(context.estimate) ~= 'number' then
    return nil
  end
  local window = type(context.window) == 'number' and context.window or nil
  if not window then
    return tokens(context.estimate) .. ' tokens'
  end
  return ('%s/%s (%d%%)'):format(tokens(context.estimate), tokens(window), math.floor(context.estimate * 100 / window + 0.5))
end

--- The winbar: the model, plan mode, the context used, the state of the turn and the todo
--- list; which chat of how many when there are several.
function M.update_winbar()
  local bar = ' Totem'
  if #M.chats > 1 then
    bar = bar .. (' %d/%d'):format(state.n, #M.chats)
  end
  if state.model then
    bar = bar .. ' · ' .. state.model
  end
  if state.mode == 'plan' then
    bar = bar .. ' · plan' -- build, the default, goes without saying
  end
  local used = M.context_line(state.context)
  if used then
    bar = bar .. ' · ' .. used
  end
  -- A window too narrow for it all cuts the rest (`%<`), not the model and the context.
  local head, tail = bar, state.busy and ' · working…' or ''
  bar = tail
  if state.todos and #state.todos > 0 then
    local done, current = 0, nil
    for _, t in ipairs(state.todos) do
      if t.status == 'completed' then
        done = done + 1
      elseif t.status == 'in_progress' and not current then
        current = t.content
      end
    end
    bar = bar .. ('  ·  todo %d/%d'):format(done, #state.todos)
    if current then
      bar = bar .. ': ' .. current
    end
  end
  bar = bar .. require('totem.jobs').winbar()
  bar = head:gsub('%%', '%%%%') .. '%<' .. bar:gsub('%%', '%%%%')
  for _, win in ipairs(windows()) do
    vim.wo[win].winbar = bar
  end
end

-- Rendering events ---------------------------------------------------------------------------

local TODO_MARK = { completed = '[x]', in_progress = '[~]', pending = '[ ]' }

local function one_line(text)
  text = tostring(text or ''):gsub('\r?\n.*', '')
  return text
end

--- The display cells a chat line has in the narrowest window showing the chat; nil when none
--- shows it.
local function text_width()
  local width = nil
  for _, win in ipairs(windows()) do
    local info = vim.fn.getwininfo(win)[1]
    local cells = vim.api.nvim_win_get_width(win) - (info and info.textoff or 0)
    width = math.min(width or cells, cells)
  end
  return width
end

--- A part's text as the chat shows it: the model's Markdown with its headings demoted and its
--- complete tables fitted to the window (markdown.lua; `final`: the part has all its text);
--- reasoning as a quote under a header line, so the folded block (two lines at least) can close.
--- Second: the tables fitted (markdown.lines).
local function part_lines(kind, raw, final)
  if kind ~= 'reasoning' then
    return markdown.lines(raw, { width = text_width(), final = final })
  end
  local lines = vim.tbl_map(function(line)
    return '> ' .. line
  end, markdown.lines(raw))
  table.insert(lines, 1, REASONING)
  return lines, {}
end

--- Shows `lines` in place of what the part shows (`part.shown`, from its mark's row on): from
--- the first line that differs. When only the last line grows, the new text is inserted, so
--- marks on the line stay. `fitted`: its tables drawn to fit (tables.fit_all), kept for a yank.
local function redraw_part(buf, part, lines, fitted)
  local start = vim.api.nvim_buf_get_extmark_by_id(buf, ns, part.mark, {})[1]
  if not start then
    return
  end
  local shown = part.shown
  local from = 1
  while from < #shown and from < #lines and shown[from] == lines[from] do
    from = from + 1
  end
  local row, current = start + from - 1, shown[from]
  if from == #shown and vim.startswith(lines[from], current) then
    local added = { lines[from]:sub(#current + 1), unpack(lines, from + 1) }
    vim.api.nvim_buf_set_text(buf, row, #current, row, #current, added)
  else
    vim.api.nvim_buf_set_lines(buf, row, start + #shown, false, { unpack(lines, from) })
  end
  part.shown, part.fitted = lines, fitted
end

--- The part being streamed has all its text: a table at its end is fitted now; a text part
--- that may hold a table is kept (`state.texts`) to be fitted again when the window's width
--- changes.
function finish_part(buf)
  local part = state.part
  state.part = nil
  if not part or part.kind ~= 'text' then
    return
  end
  redraw_part(buf, part, part_lines(part.kind, part.raw, true))
  if part.raw:find('|', 1, true) then
    table.insert(state.texts, part)
  end
end

local function stream(buf, kind, part_id, text)
  if not state.step_mark then
    -- The first output of this step: where a stepDiscarded cuts back to.
    open_block(buf, kind, true)
    state.step_mark = vim.api.nvim_buf_set_extmark(buf, ns, last_row(buf), 0, { right_gravity = false })
  end
  if not state.part or state.part.id ~= part_id then
    open_block(buf, kind, true)
    local mark = vim.api.nvim_buf_set_extmark(buf, ns, last_row(buf), 0, { right_gravity = false })
    state.part = { kind = kind, id = part_id, raw = '', mark = mark, shown = { '' } }
  end
  local part = state.part
  part.raw = part.raw .. text
  redraw_part(buf, part, part_lines(kind, part.raw, false))
end

--- Fits the tables of the chat's answers to the width of its window again (after a resize, or
--- when the chat is shown): a part whose lines are no longer what it drew is left alone.
local function refit(buf)
  local kept = {}
  for _, part in ipairs(state.texts) do
    local start = vim.api.nvim_buf_get_extmark_by_id(buf, ns, part.mark, {})[1]
    if start then
      local now = vim.api.nvim_buf_get_lines(buf, start, start + #part.shown, false)
      if vim.deep_equal(now, part.shown) then
        redraw_part(buf, part, part_lines(part.kind, part.raw, true))
        table.insert(kept, part)
      end
    end
  end
  state.texts = kept
  if state.part and state.part.kind == 'text' then
    redraw_part(buf, state.part, part_lines('text', state.part.raw, false))
  end
end

--- What a yank of whole lines in the chat gives: a table drawn to fit the window, when all its
--- lines are yanked, as the model wrote it (Markdown to paste elsewhere); nil when the yank has
--- none of them.
local function yanked_source(buf, event)
  local first = vim.api.nvim_buf_get_mark(buf, '[')[1] - 1
  local last = vim.api.nvim_buf_get_mark(buf, ']')[1] - 1
  if event.operator ~= 'y' or event.regtype ~= 'V' or #event.regcontents ~= last - first + 1 then
    return nil
  end
  local swaps, found = {}, false -- first row of a table -> {to = its last row, source}
  local parts = vim.list_extend({}, state.texts)
  if state.part then
    table.insert(parts, state.part)
  end
  for _, part in ipairs(parts) do
    local start = vim.api.nvim_buf_get_extmark_by_id(buf, ns, part.mark, {})[1]
    local intact = start and vim.deep_equal(vim.api.nvim_buf_get_lines(buf, start, start + #part.shown, false), part.shown)
    for _, t in ipairs(intact and part.fitted or {}) do
      local from, to = start + t.first - 1, start + t.last - 1
      if from >= first and to <= last then
        swaps[from], found = { to = to, source = t.source }, true
      end
    end
  end
  if not found then
    return nil
  end
  local out, row = {}, first
  while row <= last do
    local swap = swaps[row]
    if swap then
      vim.list_extend(out, swap.source)
      row = swap.to + 1
    else
      table.insert(out, event.regcontents[row - first + 1])
      row = row + 1
    end
  end
  return out
end

function M.on_yank(buf)
  local event = vim.v.event
  local lines = with(M.chat_of_buf(buf), yanked_source, buf, event)
  if lines then
    for _, reg in ipairs(event.regname == '' and { '"', '0' } or { event.regname }) do
      pcall(vim.fn.setreg, reg, lines, 'V')
    end
  end
end

function M.refit()
  for _, chat in ipairs(M.chats) do
    if chat.buf and vim.api.nvim_buf_is_valid(chat.buf) and (#chat.texts > 0 or chat.part) then
      with(chat, function()
        if #windows() > 0 then
          edit(refit)
        end
      end)
    end
  end
end

function M.foldtext()
  local lines = vim.v.foldend - vim.v.foldstart
  local first = vim.fn.getline(vim.v.foldstart)
  if starts(first, CALL) then
    local below = vim.v.foldstart + 1
    while starts(vim.fn.getline(below), subagent.PREFIX) do
      below = below + 1
    end
    return first .. '  ' .. vim.trim(vim.fn.getline(below))
  elseif starts(first, subagent.PREFIX) then
    return ('%s (%d line%s, folded)'):format(first, lines, lines == 1 and '' or 's')
  elseif results.is_output(first) then
    local count = lines + 1
    return ('%sOutput (%d line%s)'):format(results.OUTPUT, count, count == 1 and '' or 's')
  end
  return ('> Reasoning (%d line%s)'):format(lines, lines == 1 and '' or 's')
end

local render = {}

function render.turnStart(buf, e)
  state.busy = true
  state.model = e.model or state.model
  state.step_mark = nil
  if state.last ~= 'user' then
    open_block(buf, 'user', true)
    append_lines(buf, { M.TOTEM })
  end
  state.last = 'turn'
end

function render.textDelta(buf, e)
  stream(buf, 'text', e.partId, e.text or '')
end

function render.reasoningDelta(buf, e)
  stream(buf, 'reasoning', e.partId, e.text or '')
end

function render.stepDiscarded(buf)
  if state.step_mark then
    local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, state.step_mark, {})[1]
    if row then
      vim.api.nvim_buf_set_lines(buf, row, -1, false, { '' })
    end
    vim.api.nvim_buf_del_extmark(buf, ns, state.step_mark)
  end
  state.step_mark = nil
  state.part = nil
end

function render.stepEnd(buf, e)
  finish_part(buf)
  state.step_mark = nil
  state.model = e.model or state.model
end

function render.toolStart(buf, e)
  if state.last ~= 'tool' then
    open_block(buf, 'tool', true)
  else
    open_block(buf, 'tool', false)
  end
  local title = e.title ~= '' and e.title or e.tool
  append_lines(buf, { CALL .. one_line(title) })
  state.calls[e.callId] = vim.api.nvim_buf_set_extmark(buf, ns, last_row(buf), 0, { right_gravity = false })
  state.commands[e.callId] = results.command_line(e.tool, e.input, title)
end

function render.toolEnd(buf, e)
  local lines = results.lines(vim.tbl_extend('force', e, { command = state.commands[e.callId] }))
  state.commands[e.callId] = nil
  local mark = state.calls[e.callId]
  local row = mark and vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {})[1]
  if row then
    -- Under the call's line, after its sub-agent's block when it is a `task` call.
    local at = row + 1 + subagent.size(buf, e.callId)
    vim.api.nvim_buf_set_lines(buf, at, at, false, lines)
    vim.api.nvim_buf_del_extmark(buf, ns, mark)
    state.calls[e.callId] = nil
    -- The call's fold depends on its result, below it (foldexpr looks ahead), and Neovim
    -- evaluates the folds of the lines that change: the call's lines are written again.
    local last = at + #lines
    vim.api.nvim_buf_set_lines(buf, row, last, false, vim.api.nvim_buf_get_lines(buf, row, last, false))
  else
    append_lines(buf, lines)
  end
  subagent.finish(buf, e.callId)
  if type(e.changed) == 'table' and #e.changed > 0 then
    vim.schedule(function()
      pcall(vim.cmd, 'silent! checktime')
    end)
  end
end

function render.todo(buf, e)
  state.todos = e.todos or {}
  open_block(buf, 'note', true)
  local lines = { '**Todo**' }
  for _, t in ipairs(state.todos) do
    table.insert(lines, ('- %s %s'):format(TODO_MARK[t.status] or '[ ]', one_line(t.content)))
  end
  append_lines(buf, lines)
  state.last = 'tool' -- the call's result line follows without a gap
  M.update_winbar()
end

function render.notice(buf, e)
  open_block(buf, 'note', true)
  append_lines(buf, { ('**%s:** %s'):format(e.level == 'error' and 'Error' or 'Note', one_line(e.message)) })
end

local RETRY = '*`r` in the chat tries again.*'

--- An error: the provider's message, what fixes it (the server's `hint`: which provider, which
--- config key or `totem auth set NAME`), and that `r` tries again (totem/retry). The failed turn
--- is remembered from where its failed step began: a retry sets that step aside, so the chat
--- cuts back to there.
function render.error(buf, e)
  local from = state.step_mark and vim.api.nvim_buf_get_extmark_by_id(buf, ns, state.step_mark, {})[1]
  open_block(buf, 'note', true)
  from = from or last_row(buf)
  state.retry = {
    cut = vim.api.nvim_buf_set_extmark(buf, ns, from, 0, { right_gravity = false }),
    message = e.message_sent or state.last_message,
  }
  local lines = { ('**Error** (%s): %s'):format(e.errorClass or '?', one_line(e.message)) }
  if type(e.hint) == 'string' and e.hint ~= '' then
    table.insert(lines, '**Fix:** ' .. one_line(e.hint))
  end
  table.insert(lines, RETRY)
  append_lines(buf, lines)
end

--- The end of a turn: the model that answered, and why it stopped when it did not finish.
local function sign(buf, model, stop_reason)
  open_block(buf, 'sign', true)
  local line = '*— ' .. (model or '?') .. '*'
  if stop_reason and stop_reason ~= 'finished' then
    line = line .. ' (' .. stop_reason .. ')'
  end
  append_lines(buf, { line })
end

function render.turnEnd(buf, e)
  state.busy = false
  state.model = e.model or state.model
  sign(buf, e.model or state.model, e.stopReason)
  state.calls = {}
  state.commands = {}
  subagent.reset(buf)
  state.step_mark = nil
  require('totem.permission').close_for(e.sessionId)
end

-- callId -> the lines saying what the user took of the change it proposed. Only this Neovim
-- knows it (the server stores what was applied, and the result line says whether the user
-- changed it), so a session drawn again here shows them too.
M.reviews = {}

local function show_review(buf, call_id)
  local lines = M.reviews[call_id]
  local mark = state.calls[call_id]
  local row = mark and vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {})[1]
  if not lines then
    return
  end
  local shown = vim.tbl_map(function(line)
    return '    ' .. line
  end, lines)
  if row then
    local at = row + 1 + subagent.size(buf, call_id)
    vim.api.nvim_buf_set_lines(buf, at, at, false, shown)
  else
    append_lines(buf, shown)
  end
end

--- What the user took of a reviewed change (permission.lua), under the call's line: the lines
--- go after its sub-agent block and before its result, which comes later.
function M.reviewed(session, call_id, lines)
  M.reviews[call_id] = lines
  local chat = M.chat_of(session)
  if chat then
    with(chat, edit, function(buf)
      show_review(buf, call_id)
    end)
  end
end

--- The session's mode and model chosen before it existed (`wanted`): its first turn had them
--- (totem/chat's `mode` and `model`); from now on they are the session's.
local function settle_wanted(chat, c)
  if chat.wanted.mode then
    client.request(c, 'totem/setMode', { sessionId = chat.session, mode = chat.wanted.mode })
  end
  if chat.wanted.model then
    client.request(c, 'totem/setModel', { sessionId = chat.session, model = chat.wanted.model })
  end
  chat.wanted = {}
end

--- The chat a turn of an unknown session goes to: the chat that sent a message for a new session
--- on that server, else (a turn started elsewhere: a code action's "Ask Totem to fix") the
--- current chat when it is unused, else a new one, shown unless the current chat is busy.
local function chat_for_new_session(client_id)
  for _, chat in ipairs(M.chats) do
    if chat.pending and chat.client_id == client_id then
      return chat
    end
  end
  local chat = unused(M.state) and M.state or M.add_chat()
  if M.state.busy and chat ~= M.state then
    client.notify('a session started in another chat (:TotemSessions shows it)')
  else
    M.show(chat)
    M.open(false)
  end
  return chat
end

function M.on_event(e, client_id)
  if type(e) ~= 'table' or type(e.kind) ~= 'string' then
    return
  end
  local chat = M.chat_of(e.sessionId)
  if not chat then
    if e.kind ~= 'turnStart' then
      return
    end
    chat = chat_for_new_session(client_id)
    chat.session = e.sessionId
    chat.client_id = client_id
    chat.pending = false
    local c = vim.lsp.get_client_by_id(client_id)
    chat.root = c and c.root_dir or chat.root
    if c then
      settle_wanted(chat, c)
    end
  end
  with(chat, M.draw_event, e)
  if e.kind == 'turnEnd' and (e.parentCallId == nil or e.parentCallId == vim.NIL) then
    require('totem.notices').turn_end(chat, e)
    if not chat.request_id then
      -- A turn started elsewhere (a code action): its request ends just after this event.
      vim.defer_fn(function()
        M.send_queued(chat)
      end, 200)
    end
  end
end

--- Draws the event `e` of the session of `state`.
function M.draw_event(e)
  if e.kind == 'context' then
    state.context = { estimate = e.estimate, window = e.window, breakdown = e.breakdown }
    return M.update_winbar()
  end
  if e.parentCallId ~= nil and e.parentCallId ~= vim.NIL then
    -- A sub-agent's event: into its task call's block, never into the conversation's answer.
    local mark = state.calls[e.parentCallId]
    if mark then
      edit(function(buf)
        local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {})[1]
        if row then
          subagent.render(buf, e, row)
        end
      end)
    end
    return
  end
  local fn = render[e.kind]
  if fn then
    edit(function(buf)
      fn(buf, e)
    end)
    if e.kind == 'turnStart' or e.kind == 'turnEnd' or e.kind == 'stepEnd' then
      M.update_winbar()
    end
  end
end

-- Sending --------------------------------------------------------------------------------------

--- Clears the chat; the next message starts a new session.
function M.reset()
  state.session = nil
  state.part = nil
  state.last = nil
  state.calls = {}
  state.commands = {}
  state.title = nil
  state.todos = nil
  state.step_mark = nil
  state.retry = nil
  state.context = nil
  state.texts = {}
  edit(function(buf)
    subagent.reset(buf, true)
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  end)
  M.update_winbar()
end

local function relative(uri, c)
  local path = vim.uri_to_fname(uri)
  local root = c and c.root_dir
  if root and vim.startswith(path, root .. '/') then
    return path:sub(#root + 2)
  end
  return vim.fn.fnamemodify(path, ':~:.')
end


--- The lines of a message in the chat: the speaker, what the user wrote, the label of its
--- context when it has one and what its mentions attached (`attached`: mentions.lua's names),
--- and the answer's heading.
local function user_lines(text, where, attached)
  local lines = { M.YOU }
  vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
  local told = mentions.line(attached or {})
  if where or told then
    table.insert(lines, '')
  end
  if where then
    table.insert(lines, '*(context: ' .. where .. ')*')
  end
  if told then
    table.insert(lines, told)
  end
  vim.list_extend(lines, { '', M.TOTEM })
  return lines
end

local mentions_ns = vim.api.nvim_create_namespace('totem.mentions')
vim.api.nvim_set_hl(0, 'TotemMention', { link = 'Special', default = true })

-- What the server resolves as a mention (docs/protocol.md, "Mentions"): @path (with #L10-20),
-- #buffer, #selection, #diagnostics, at the start of a word.
local MENTIONS = { '()@[%w_%./%-]+#L%d+%-%d+()', '()@[%w_%./%-]+#L%d+()', '()@[%w_%./%-]+()', '()#buffer()', '()#selection()', '()#diagnostics()' }

--- The mentions of a message's text lines (rows `first`.. of `buf`) drawn as chips: each one a
--- span of its own highlight (TotemMention), as the server resolved them into context.
local function mark_mentions(buf, first, count)
  for row = first, first + count - 1 do
    local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
    local taken = {}
    for _, pattern in ipairs(MENTIONS) do
      for from, to in line:gmatch(pattern) do
        local starts_word = from == 1 or line:sub(from - 1, from - 1):match('%s') ~= nil
        if starts_word and not taken[from] then
          taken[from] = true
          vim.api.nvim_buf_set_extmark(buf, mentions_ns, row, from - 1, { end_col = to - 1, hl_group = 'TotemMention' })
        end
      end
    end
  end
end

local function show_user(buf, text, where, attached)
  open_block(buf, 'user', true)
  local text_lines = vim.split(text, '\n', { plain = true })
  append_lines(buf, user_lines(text, where, attached))
  -- The request's own lines: after its "## You", which is the last one in the buffer now.
  local rows = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for row = #rows, 1, -1 do
    if rows[row] == M.YOU then
      mark_mentions(buf, row, #text_lines)
      break
    end
  end
  state.last = 'user'
end

--- Runs a request that runs a turn of the chat's session (totem/chat, totem/retry,
--- totem/regenerate): the chat is busy until it answers; `done(err, result)` then runs with
--- the chat as `state`.
function M.request_turn(c, method, params, done)
  local chat = state
  chat.busy = true
  M.update_winbar()
  chat.request_id = client.request(c, method, params, function(err, result)
    with(chat, function()
      chat.request_id = nil
      chat.pending = false
      chat.busy = false
      if not err and result and result.sessionId then
        chat.session = result.sessionId
      end
      done(err, result)
      M.update_winbar()
    end)
    vim.schedule(function()
      M.send_queued(chat)
    end)
  end)
  if not chat.request_id then
    chat.busy = false
    chat.pending = false
    M.update_winbar()
  end
end

local function busy_warning()
  if state.busy or state.pending then
    client.notify('a turn is still running (:TotemAbort stops it)', vim.log.levels.WARN)
    return true
  end
  return false
end

--- Sends `text` (with `context` {uri, range?}) in the chat's session (a new one when none).
function M.send(text, context, bufnr)
  if not text or vim.trim(text) == '' then
    return
  end
  local action = ({ ['/undo'] = 'undo', ['/compact'] = 'compact' })[vim.trim(text)]
  if action then
    -- A built-in action (totem/commands lists it without a file): the editor calls its request.
    return require('totem.commands')[action]()
  end
  local c = client.get(bufnr)
  if not c then
    client.notify('no Totem server is running: open a file inside a project first', vim.log.levels.ERROR)
    return
  end
  if queue.waits(state) then
    return queue.add(state, { text = text, context = context, bufnr = bufnr })
  end
  if state.client_id and state.client_id ~= c.id then
    local mine = vim.lsp.get_client_by_id(state.client_id)
    if state.session and mine and not mine:is_stopped() then
      -- Another project: another server, another session, another chat (with the images).
      local images = state.attachments
      state.attachments = {}
      local other = M.new()
      other.attachments = images
      with(other, M.send, text, context, bufnr)
      return M.open(false)
    end
  end
  state.client_id = c.id
  state.root = c.root_dir
  state.last_message = { text = text, context = context, bufnr = bufnr }
  if not state.session then
    state.title = one_line(vim.trim(text)) -- as the server titles a new session
  end
  state.retry = nil
  local images = state.attachments
  state.attachments = {} -- they go with this message; edit below draws them gone
  M.open(false)
  local editor, problem = mentions.editor(text, context, bufnr, M.last_file_buf)
  if problem then
    client.notify(problem, vim.log.levels.WARN)
  end
  edit(function(buf)
    local where = nil
    if context then
      where = relative(context.uri, c)
      if context.range then
        where = ('%s:%d-%d'):format(where, context.range.start.line + 1, context.range['end'].line)
      end
    end
    show_user(buf, text, where, mentions.sent(text, editor, c.root_dir, function(uri)
      return relative(uri, c)
    end))
  end)
  local params = { text = text, sessionId = state.session, context = context, editor = editor }
  if #images > 0 then
    params.attachments = attachments.params(images)
  end
  if not state.session then
    params.mode, params.model = state.wanted.mode, state.wanted.model
  end
  state.pending = state.session == nil
  M.request_turn(c, 'totem/chat', params, function(err)
    if err then
      edit(function(buf)
        open_block(buf, 'note', true)
        append_lines(buf, { '**Error:** ' .. one_line(err.message or vim.inspect(err)) })
      end)
      -- Invalid params: no turn started, so the images wait for the next message again.
      if err.code == -32602 and #images > 0 and #state.attachments == 0 then
        state.attachments = images
        draw_attachments(M.buf())
      end
    end
  end)
end

--- The input's title: the prompt and the pending attachments, which the input (over the bottom of
--- the chat) hides where the chat draws them.
local function input_title()
  return 'Totem> ' .. table.concat(vim.tbl_map(attachments.label, state.attachments), ' ')
end

--- Adds the image file `path` to the attachments of the chat's next message (:TotemAttach);
--- refuses (a warning) a file the server would not take.
function M.attach(path)
  local item, problem = attachments.image(path)
  if not item then
    client.notify(problem, vim.log.levels.WARN)
    return
  end
  table.insert(state.attachments, item)
  M.open(false)
  draw_attachments(M.buf())
  if input.current and vim.api.nvim_win_is_valid(input.current.win) then
    vim.api.nvim_win_set_config(input.current.win, { title = ' ' .. input_title() .. ' ' })
  end
end

--- Completion of the chat input (input.lua's `complete`): totem/complete for the input's
--- `text` and the cursor at `position` (UTF-16), `@` files, `#` editor mentions and `/`
--- commands; `done(result)` gets its {start, end, items}, or nil.
function M.complete(text, position, done)
  local c = state.client_id and vim.lsp.get_client_by_id(state.client_id) or client.get(M.last_file_buf)
  if not c then
    return done(nil)
  end
  local params = { text = text, position = position, sessionId = state.session }
  if M.last_file_buf and vim.api.nvim_buf_is_valid(M.last_file_buf) then
    params.uri = vim.uri_from_bufnr(M.last_file_buf)
  end
  client.request(c, 'totem/complete', params, function(err, result)
    done(not err and type(result) == 'table' and result or nil)
  end)
end

--- Asks for a message in the chat's input (input.lua: several lines; <C-s> sends) and sends it
--- (with `context`) from this chat. <Tab> completes mentions and slash commands. `default`: the
--- text the input starts with.
function M.prompt(context, bufnr, default)
  local chat = state
  input.open({
    prompt = input_title(),
    default = default,
    anchor = windows()[1],
    complete = function(text, position, done)
      with(chat, M.complete, text, position, done)
    end,
    on_submit = function(text)
      with(chat, M.send, text, context, bufnr)
    end,
  })
end

--- Tries the session's failed last turn again (the `r` under an error): totem/retry sets its
--- failed step aside and answers the same request from there, so the chat drops what it showed
--- of that step and of the error and shows the new answer in its place. When the server will
--- not retry (retried three times; an older server), the message is sent again.
function M.retry()
  local again = state.retry
  local c = state.client_id and vim.lsp.get_client_by_id(state.client_id)
  if not again or not c or not state.session then
    client.notify('nothing to try again: the last turn did not fail', vim.log.levels.WARN)
    return
  end
  if busy_warning() then
    return
  end
  state.retry = nil
  edit(function(buf)
    local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, again.cut, {})[1]
    if row then
      vim.api.nvim_buf_set_lines(buf, row, -1, false, {})
    end
    vim.api.nvim_buf_del_extmark(buf, ns, again.cut)
    state.last = 'user' -- the answer goes on under the request's "## Totem"
    state.part, state.step_mark = nil, nil
  end)
  M.request_turn(c, 'totem/retry', { sessionId = state.session }, function(err)
    if err then
      local message = again.message
      if message then
        M.send(message.text, message.context, message.bufnr)
      else
        client.notify('retry: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
    end
  end)
end

function M.abort()
  local c = state.client_id and vim.lsp.get_client_by_id(state.client_id)
  if not c then
    return
  end
  queue.ask_on_stop(state)
  if state.session then
    client.notify_server(c, 'totem/abort', { sessionId = state.session })
  elseif state.request_id then
    c:cancel_request(state.request_id)
  end
end

--- The first message queued in `chat` (queue.lua) sent, once no turn runs there.
function M.send_queued(chat)
  queue.next(chat, function(message)
    with(chat, M.send, message.text, message.context, message.bufnr)
  end)
end

-- The conversation's messages -------------------------------------------------------------------

--- The 0-based rows of the chat's requests (its "## You" lines), in order.
function M.request_rows()
  local rows = {}
  for i, line in ipairs(vim.api.nvim_buf_get_lines(M.buf(), 0, -1, false)) do
    if line == M.YOU then
      table.insert(rows, i - 1)
    end
  end
  return rows
end

--- Which request (its index in request_rows) the cursor of the chat's window is in, else the last.
function M.request_at_cursor()
  local rows = M.request_rows()
  local win = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(win) ~= M.buf() then
    return #rows > 0 and #rows or nil
  end
  local cursor = vim.api.nvim_win_get_cursor(win)[1] - 1
  local found = #rows > 0 and 1 or nil
  for i, row in ipairs(rows) do
    if row <= cursor then
      found = i
    end
  end
  return found
end

--- Empties the chat below the answer heading of request `index`, for a new answer there
--- (totem/regenerate).
function M.cut_after_request(index)
  edit(function(buf)
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local row = M.request_rows()[index]
    local heading = row
    while heading and lines[heading + 1] ~= M.TOTEM do
      heading = heading + 1 <= #lines and heading + 1 or nil
    end
    if heading then
      vim.api.nvim_buf_set_lines(buf, heading + 1, -1, false, {})
    end
    vim.api.nvim_buf_clear_namespace(buf, ns, heading and heading + 1 or 0, -1)
    state.last = 'user'
    state.part, state.step_mark, state.calls, state.retry = nil, nil, {}, nil
    subagent.reset(buf)
  end)
end

--- The requests of a stored session (totem/session's result), in order, as the chat shows them
--- (each a "## You"): user messages with text (not the prompts Totem adds in the user's place).
--- Each: {id, text, variant = {index, count}?} (variant: of its answer, when it has several).
function M.requests(session)
  local found, by_id = {}, {}
  for _, message in ipairs(session.messages or {}) do
    if message.role == 'user' then
      local text = nil
      for _, part in ipairs(message.parts or {}) do
        if part.type == 'text' and not part.discarded then
          text = (text or '') .. (part.data.typed or part.data.text or '')
        end
      end
      if text then
        local request = { id = message.id, text = (M.split_context(text)) }
        table.insert(found, request)
        by_id[message.id] = request
      end
    elseif type(message.variant) == 'table' and by_id[message.variant.request] then
      by_id[message.variant.request].variant = { index = message.variant.index, count = message.variant.count }
    end
  end
  return found
end

--- Fetches the chat's session and draws it again (`done(session)` after, nil when it failed).
function M.reload(done)
  local chat = state
  local c = chat.client_id and vim.lsp.get_client_by_id(chat.client_id)
  if not c or not chat.session then
    return done and done(nil)
  end
  client.request(c, 'totem/session', { sessionId = chat.session }, function(err, session)
    if err then
      client.notify('session: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return done and done(nil)
    end
    with(chat, function()
      M.show_session(session, c.id, chat.model)
      if done then
        done(session)
      end
    end)
  end)
end

--- The chat shows `session` (a totem/session result): its own chat when one shows it already
--- (drawn again unless a turn runs there), else the current chat when unused, else a new one.
function M.open_session(session, client_id, model)
  local chat = M.chat_of(session.sessionId)
  if not chat then
    chat = unused(M.state) and M.state or M.add_chat()
  end
  M.show(chat)
  if not chat.busy then
    M.show_session(session, client_id, model)
  end
  M.open(true)
end

--- The server of the chat stopped: its running calls are marked interrupted, its turn is over.
function M.server_stopped(client_id)
  for _, chat in ipairs(M.chats) do
    if chat.client_id == client_id and (chat.busy or chat.pending) then
      with(chat, function()
        edit(function(buf)
          for call_id in pairs(state.calls) do
            render.toolEnd(buf, { callId = call_id, status = 'interrupted', summary = 'the server stopped' })
          end
          open_block(buf, 'note', true)
          append_lines(buf, { '**Note:** the server stopped during this turn.' })
        end)
        state.calls, state.busy, state.pending, state.request_id = {}, false, false, nil
        M.update_winbar()
      end)
    end
  end
end

--- A server started for `root` (a restart): the chats of a server of that root that is gone are
--- its now, and show their sessions as stored.
function M.take_up(c)
  for _, chat in ipairs(M.chats) do
    local old = chat.client_id and vim.lsp.get_client_by_id(chat.client_id)
    if chat.client_id and chat.client_id ~= c.id and (not old or old:is_stopped()) and chat.root == c.root_dir then
      chat.client_id = c.id
      with(chat, M.reload)
    end
  end
end

-- History ----------------------------------------------------------------------------------------

--- A stored user text split into what the user wrote and a label for the `<context …>` block
--- the server put in front of it (protocol.md, totem/chat): `controllers/api.js:5-8`.
function M.split_context(text)
  local file, lines, rest = text:match('^<context file="([^"]*)" lines="([^"]*)">.-</context>%s*(.*)$')
  if not file then
    file, rest = text:match('^<context file="([^"]*)"%s*/>%s*(.*)$')
  end
  if not file then
    return text, nil
  end
  return rest, lines and (file .. ':' .. lines) or file
end

--- What a stored request shows: what the user typed, the label of its context and the names of
--- what its mentions attached (mentions.stored). With mentions the server keeps what was typed
--- (`typed`) and one entry a block (`attachments`); the editor's context is the one of kind
--- `context`.
local function request_shown(data)
  -- `typed`: what the user typed when it was a slash command (`text` is its expansion).
  local text, where = M.split_context(data.typed or data.text or '')
  local attached = mentions.stored(data.attachments)
  for _, block in ipairs(type(data.attachments) == 'table' and data.attachments or {}) do
    if block.kind == 'context' then
      local lines = type(block.lines) == 'table' and (':' .. block.lines[1] .. '-' .. block.lines[2]) or ''
      where = block.path .. lines
    end
  end
  return text, where, attached
end

--- One stored tool part, drawn as its events were.
local function show_call(buf, part)
  local data = part.data or {}
  render.toolStart(buf, { callId = data.callId, title = data.title or data.tool, tool = data.tool, input = data.input })
  local todos = type(data.input) == 'table' and data.input.todos
  if data.tool == 'todo' and type(todos) == 'table' then
    render.todo(buf, { todos = todos })
  end
  if type(data.thread) == 'table' then
    -- A task call's stored thread: its block, as it was shown live.
    local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, state.calls[data.callId], {})[1]
    for _, nested in ipairs(subagent.thread_events(data.thread, data.callId)) do
      subagent.render(buf, nested, row)
    end
  end
  show_review(buf, data.callId)
  render.toolEnd(buf, {
    callId = data.callId, tool = data.tool, status = part.status, summary = data.summary,
    output = data.output, feedback = data.feedback, exitCode = data.exitCode,
  })
end

--- Shows a stored session (totem/session result) in the chat and makes it the chat's, drawn as
--- the live chat drew it: the user's words without the context block (its label under them),
--- each turn's steps, calls, errors and notices, and one footer a turn; an answer with
--- variants says which it is. A call stored without a result is drawn interrupted. `model`:
--- the session's model, for the footer of a turn that stored no step (it failed before the
--- model answered).
function M.show_session(session, client_id, model)
  local context = state.session == session.sessionId and state.context or nil
  M.reset()
  state.session = session.sessionId
  state.title = session.title
  state.client_id = client_id
  state.context = context
  state.mode = session.mode or state.mode
  local c = vim.lsp.get_client_by_id(client_id)
  state.root = c and c.root_dir or state.root
  edit(function(buf)
    local turn = nil -- {model, ended} of the turn being drawn
    local last_model = session.model or model
    local last_text = nil
    local function footer()
      if turn then
        last_model = turn.model or last_model
        sign(buf, last_model, turn.ended)
        state.model = last_model or state.model
      end
      state.step_mark, state.part, state.calls = nil, nil, {}
      subagent.reset(buf)
    end
    for _, message in ipairs(session.messages or {}) do
      local request = nil
      if message.role == 'user' then
        for _, part in ipairs(message.parts or {}) do
          if part.type == 'text' and not part.discarded then
            request = request or part.data or {}
          end
        end
      end
      if request then
        footer()
        local text, where, attached = request_shown(request)
        show_user(buf, text, where, attached)
        last_text = text
        turn = { model = nil, ended = nil }
      elseif message.role ~= 'user' then
        turn = turn or { model = nil, ended = nil }
        if type(message.variant) == 'table' then
          open_block(buf, 'note', true)
          append_lines(buf, { M.VARIANT:format(message.variant.index + 1, message.variant.count) })
        end
        for _, part in ipairs(message.parts or {}) do
          local data = part.data or {}
          if not part.discarded then
            if part.type == 'text' or part.type == 'reasoning' then
              stream(buf, part.type, part.id, data.text or '')
            elseif part.type == 'step' then
              turn.model = data.model or turn.model
              finish_part(buf)
              state.step_mark = nil
            elseif part.type == 'tool' then
              show_call(buf, part)
            elseif part.type == 'error' then
              render.error(buf, { errorClass = data.errorClass, message = data.text, hint = data.hint, message_sent = last_text and { text = last_text } })
              turn.ended = data.stopReason or 'error'
            elseif part.type == 'notice' then
              render.notice(buf, { level = data.level or 'info', message = data.text }) -- kept unless info
              turn.ended = data.stopReason or turn.ended
            end
          end
        end
      end
    end
    footer()
    if not (turn and turn.ended == 'error') then
      state.retry = nil -- only the session's last turn can be tried again
    end
  end)
  M.update_winbar()
end

return M
