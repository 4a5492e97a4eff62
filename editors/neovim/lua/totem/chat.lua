-- The chat: one markdown buffer (`totem://chat`) in a split, showing the current session.
-- It renders `totem/event` notifications (docs/events.md) as they stream, and sends
-- `totem/chat` requests.
local client = require('totem.client')
local input = require('totem.input')
local markdown = require('totem.markdown')
local results = require('totem.results')
local subagent = require('totem.subagent')

local M = {}

local ns = vim.api.nvim_create_namespace('totem.chat') -- tool lines, step starts
local REASONING = '> *Reasoning*'

M.state = {
  buf = nil,
  client_id = nil,
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
  todos = nil,
  model = nil,
  commands = nil, -- totem/commands of the chat's server, for completing "/" in the input
}
local state = M.state

local function options()
  return require('totem').options or require('totem').defaults
end

-- Buffer ----------------------------------------------------------------------------------

--- Reasoning blocks fold: a "> *Reasoning*" line opens a fold that the following "> " lines
--- continue (a quote in an answer, after a blank line, is not folded). A sub-agent's block
--- (subagent.lua: its lines start with subagent.PREFIX) is a fold of its own, and so is a
--- command's output (results.lua). The window's foldlevel is 1: these folds are level 2, so
--- closed, except the output of a command that failed, a level-1 fold, open.
function M.foldexpr(lnum)
  local line = vim.fn.getline(lnum)
  local prefix = subagent.PREFIX
  if line:sub(1, #prefix) == prefix then
    return vim.fn.getline(lnum - 1):sub(1, #prefix) == prefix and '2' or '>2'
  elseif results.is_output(line) then
    local above = vim.fn.getline(lnum - 1)
    if results.is_output(above) then
      return '='
    end
    return results.failed(above) and '>1' or '>2'
  elseif line:sub(1, #REASONING) == REASONING then
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
  vim.api.nvim_buf_set_name(buf, 'totem://chat')
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
  return buf
end

local function windows()
  local buf = state.buf
  if not buf then
    return {}
  end
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_buf(win) == buf
  end, vim.api.nvim_list_wins())
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

--- Starts a block on a fresh line; `gap`: after a blank line.
local function open_block(buf, kind, gap)
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
  state.part = nil
end

-- Window ----------------------------------------------------------------------------------

function M.is_open()
  return #windows() > 0
end

--- Opens the chat in a split (focus it when `focus`); returns the window.
function M.open(focus)
  local buf = M.buf()
  local existing = windows()[1]
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
  local wo = vim.wo[win]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = 'no'
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'totem.chat'.foldexpr(v:lnum)"
  wo.foldtext = "v:lua.require'totem.chat'.foldtext()"
  wo.foldlevel = 1 -- see foldexpr: reasoning, sub-agents and output closed, failures open
  wo.foldenable = true
  wo.conceallevel = 2
  M.update_winbar()
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  return win
end

function M.close()
  for _, win in ipairs(windows()) do
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

--- The winbar: state of the turn and the todo list.
function M.update_winbar()
  local bar = ' Totem'
  if state.model then
    bar = bar .. ' · ' .. state.model
  end
  bar = bar .. (state.busy and ' · working…' or '')
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
  bar = bar:gsub('%%', '%%%%')
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

--- A part's text as the chat shows it: the model's Markdown with its headings demoted
--- (markdown.lua); reasoning as a quote under a header line, so the folded block (two lines at
--- least) can close.
local function part_lines(kind, raw)
  local lines = markdown.lines(raw)
  if kind == 'reasoning' then
    lines = vim.tbl_map(function(line)
      return '> ' .. line
    end, lines)
    table.insert(lines, 1, REASONING)
  end
  return lines
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
  local lines = part_lines(kind, part.raw)
  -- A line is shown as its text so far decides: only the last line shown and the new ones can
  -- change (`#` becoming a heading). Appending is an insert, so marks on the line stay.
  local from = #part.shown
  local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, part.mark, {})[1] + from - 1
  local current = part.shown[from]
  if vim.startswith(lines[from], current) then
    local added = { lines[from]:sub(#current + 1), unpack(lines, from + 1) }
    vim.api.nvim_buf_set_text(buf, row, #current, row, #current, added)
  else
    vim.api.nvim_buf_set_lines(buf, row, row + 1, false, { unpack(lines, from) })
  end
  part.shown = lines
end

function M.foldtext()
  local lines = vim.v.foldend - vim.v.foldstart
  local first = vim.fn.getline(vim.v.foldstart)
  if first:sub(1, #subagent.PREFIX) == subagent.PREFIX then
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
    append_lines(buf, { '## Totem' })
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

function render.stepEnd(_, e)
  state.step_mark = nil
  state.part = nil
  state.model = e.model or state.model
end

function render.toolStart(buf, e)
  if state.last ~= 'tool' then
    open_block(buf, 'tool', true)
  else
    open_block(buf, 'tool', false)
  end
  append_lines(buf, { '▶ ' .. one_line(e.title ~= '' and e.title or e.tool) })
  state.calls[e.callId] = vim.api.nvim_buf_set_extmark(buf, ns, last_row(buf), 0, { right_gravity = false })
end

function render.toolEnd(buf, e)
  local lines = results.lines(e)
  local mark = state.calls[e.callId]
  local row = mark and vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {})[1]
  if row then
    -- Under the call's line, after its sub-agent's block when it is a `task` call.
    local at = row + 1 + subagent.size(e.callId)
    vim.api.nvim_buf_set_lines(buf, at, at, false, lines)
    vim.api.nvim_buf_del_extmark(buf, ns, mark)
    state.calls[e.callId] = nil
  else
    append_lines(buf, lines)
  end
  subagent.finish(e.callId)
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
  subagent.reset()
  state.step_mark = nil
  require('totem.permission').close_for(e.sessionId)
end

function M.on_event(e, client_id)
  if type(e) ~= 'table' or type(e.kind) ~= 'string' then
    return
  end
  if e.sessionId ~= state.session then
    -- A turn of another session: our own new one, or one started elsewhere (a code action's
    -- "Ask Totem to fix") while the chat is idle. Anything else is not shown.
    if e.kind ~= 'turnStart' or (state.busy and not state.pending) then
      return
    end
    if not state.pending then
      M.reset()
      M.open(false)
    end
    state.session = e.sessionId
    state.client_id = client_id
    state.pending = false
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
  state.todos = nil
  state.step_mark = nil
  state.retry = nil
  edit(function(buf)
    subagent.reset(buf)
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

--- Sends `text` (with `context` {uri, range?}) in the current session (a new one when none).
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
  if state.busy or state.pending then
    client.notify('a turn is still running (:TotemAbort stops it)', vim.log.levels.WARN)
    return
  end
  if state.client_id and state.client_id ~= c.id then
    M.reset() -- another project: another server, another session
  end
  state.client_id = c.id
  state.last_message = { text = text, context = context, bufnr = bufnr }
  state.retry = nil
  M.open(false)
  edit(function(buf)
    open_block(buf, 'user', true)
    local lines = { '## You' }
    vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
    if context then
      local where = relative(context.uri, c)
      if context.range then
        where = ('%s:%d-%d'):format(where, context.range.start.line + 1, context.range['end'].line)
      end
      table.insert(lines, '')
      table.insert(lines, '*(context: ' .. where .. ')*')
    end
    vim.list_extend(lines, { '', '## Totem' })
    append_lines(buf, lines)
    state.last = 'user'
  end)
  local params = { text = text, sessionId = state.session, context = context }
  state.pending = state.session == nil
  state.busy = true
  M.update_winbar()
  state.request_id = client.request(c, 'totem/chat', params, function(err, result)
    state.request_id = nil
    state.pending = false
    if err then
      state.busy = false
      edit(function(buf)
        open_block(buf, 'note', true)
        append_lines(buf, { '**Error:** ' .. one_line(err.message or vim.inspect(err)) })
      end)
      M.update_winbar()
      return
    end
    if result and result.sessionId then
      state.session = result.sessionId
    end
    state.busy = false
    M.update_winbar()
  end)
  if not state.request_id then
    state.busy = false
    state.pending = false
  end
end

--- The slash commands of the chat's server, fetched again in the background (each prompt).
function M.refresh_commands(c)
  client.request(c, 'totem/commands', vim.empty_dict(), function(err, commands)
    if not err and type(commands) == 'table' then
      state.commands = commands
    end
  end)
end

--- Completion of the chat input (vim.ui.input's `completion`): "/" and a word complete to the
--- slash commands of totem/commands. The input's whole text is `lead`.
function M.complete(lead)
  if not lead:match('^/[%w_.-]*$') then
    return {}
  end
  local commands = state.commands
  if not commands then
    local c = client.get()
    local answer = c and c:request_sync('totem/commands', vim.empty_dict(), 2000)
    commands = answer and answer.result or {}
    state.commands = commands
  end
  local found = {}
  for _, command in ipairs(commands) do
    local item = '/' .. command.name .. ' '
    if vim.startswith(item, lead) then
      table.insert(found, item)
    end
  end
  table.sort(found)
  return found
end

--- Asks for a message in the chat's input (input.lua: several lines; <C-s> sends) and sends it
--- (with `context`). "/" and <Tab> complete the slash commands. `default`: the text the input
--- starts with.
function M.prompt(context, bufnr, default)
  local c = client.get(bufnr)
  if c then
    M.refresh_commands(c)
  end
  input.open({
    prompt = 'Totem> ',
    default = default,
    anchor = windows()[1],
    complete = M.complete,
    on_submit = function(text)
      M.send(text, context, bufnr)
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
  if state.busy or state.pending then
    client.notify('a turn is still running (:TotemAbort stops it)', vim.log.levels.WARN)
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
  state.busy = true
  M.update_winbar()
  state.request_id = client.request(c, 'totem/retry', { sessionId = state.session }, function(err)
    state.request_id = nil
    state.busy = false
    M.update_winbar()
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
  if state.session then
    client.notify_server(c, 'totem/abort', { sessionId = state.session })
  elseif state.request_id then
    c:cancel_request(state.request_id)
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

local function show_user(buf, text, where)
  open_block(buf, 'user', true)
  local lines = { '## You' }
  vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
  if where then
    table.insert(lines, '')
    table.insert(lines, '*(context: ' .. where .. ')*')
  end
  vim.list_extend(lines, { '', '## Totem' })
  append_lines(buf, lines)
  state.last = 'user'
end

--- One stored tool part, drawn as its events were.
local function show_call(buf, part)
  local data = part.data or {}
  render.toolStart(buf, { callId = data.callId, title = data.title or data.tool, tool = data.tool })
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
  render.toolEnd(buf, {
    callId = data.callId, tool = data.tool, status = part.status, summary = data.summary,
    output = data.output, feedback = data.feedback,
  })
end

--- Shows a stored session (totem/session result) and makes it the current one, drawn as the live
--- chat drew it: the user's words without the context block (its label under them), each turn's
--- steps, calls, errors and notices, and one footer a turn. `model`: the session's model, for the
--- footer of a turn that stored no step (it failed before the model answered).
function M.show_session(session, client_id, model)
  M.reset()
  state.session = session.sessionId
  state.client_id = client_id
  edit(function(buf)
    local turn = nil -- {model, ended} of the turn being drawn
    local last_model = model
    local last_text = nil
    local function footer()
      if turn then
        last_model = turn.model or last_model
        sign(buf, last_model, turn.ended)
        state.model = last_model or state.model
      end
      state.step_mark, state.part, state.calls = nil, nil, {}
      subagent.reset()
    end
    for _, message in ipairs(session.messages or {}) do
      if message.role == 'user' then
        footer()
        local texts = {}
        for _, part in ipairs(message.parts or {}) do
          if part.type == 'text' and not part.discarded then
            -- `typed`: what the user typed when it was a slash command (`text` is its expansion).
            table.insert(texts, part.data.typed or part.data.text or '')
          end
        end
        local text, where = M.split_context(table.concat(texts, '\n'))
        show_user(buf, text, where)
        last_text = text
        turn = { model = nil, ended = nil }
      else
        turn = turn or { model = nil, ended = nil }
        for _, part in ipairs(message.parts or {}) do
          local data = part.data or {}
          if not part.discarded then
            if part.type == 'text' or part.type == 'reasoning' then
              stream(buf, part.type, part.id, data.text or '')
            elseif part.type == 'step' then
              turn.model = data.model or turn.model
              state.step_mark = nil
              state.part = nil
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
