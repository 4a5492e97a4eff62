-- The server's questions: totem/permission (a floating window with the diff, a file change
-- reviewable hunk by hunk: review.lua), totem/question and totem/trust (vim.ui.select /
-- vim.ui.input).
--
-- Neovim runs each server request handler in a coroutine (vim/lsp/rpc.lua), so a handler can
-- yield until the user answers and then return the answer.
local review = require('totem.review')

local M = {}

M.keys = {
  allow_once = 'a',
  allow_always = 'A',
  reject_once = 'r',
  reject_always = 'R',
  feedback = 'f',
  next_hunk = ']c',
  prev_hunk = '[c',
  take = 't',
  leave = 'x',
  edit = 'e',
}

-- sessionId -> the open ask (permission window) of that session.
local open = {}
M.current = nil -- the open ask: { win, buf, params, files? (review.lua), hunks?, client_id }

--- Runs `start(done)` and waits (yielding the handler's coroutine) until `done(value)` is called.
local function await(start)
  local co = coroutine.running()
  local got, value, waiting = false, nil, false
  local function done(v)
    if got then
      return
    end
    got, value = true, v
    if waiting then
      vim.schedule(function()
        local ok, err = coroutine.resume(co)
        if not ok then
          vim.notify('Totem: ' .. tostring(err), vim.log.levels.ERROR)
        end
      end)
    end
  end
  start(done)
  if not got then
    if not co or not coroutine.isyieldable() then
      -- Not in a handler coroutine (should not happen): wait on the event loop instead.
      vim.wait(24 * 3600 * 1000, function()
        return got
      end, 50)
    else
      waiting = true
      coroutine.yield()
    end
  end
  return value
end
M.await = await

local function body(params)
  local lines = {}
  if type(params.diff) == 'string' and params.diff ~= '' then
    lines = vim.split((params.diff:gsub('\n$', '')), '\n', { plain = true })
    return lines, 'diff'
  end
  local input = params.input or {}
  if type(input.command) == 'string' then
    table.insert(lines, '$ ' .. input.command)
  else
    for key, value in vim.spairs(input) do
      local text = type(value) == 'string' and value or vim.json.encode(value)
      table.insert(lines, key .. ': ' .. text:gsub('\n', '⏎'))
    end
  end
  if #lines == 0 then
    lines = { params.title or params.tool or '' }
  end
  -- More answers the server offers (`choices`, an allow once with more): key 1, 2, ...
  for i, choice in ipairs(params.choices or {}) do
    if i == 1 then
      table.insert(lines, '')
    end
    table.insert(lines, ('%d  %s'):format(i, choice.label or choice.id))
  end
  return lines, 'markdown'
end

local function footer(params, reviewing)
  local k = M.keys
  local hunks = reviewing
      and (' %s %s hunk · %s take · %s leave · %s edit ·'):format(k.next_hunk, k.prev_hunk, k.take, k.leave, k.edit)
    or ''
  local more = params.choices and #params.choices > 0 and (' 1-%d as above ·'):format(#params.choices) or ''
  return ('%s %s allow ·%s %s always (%s %s) · %s reject · %s never · %s %s '):format(
    hunks,
    k.allow_once,
    more,
    k.allow_always,
    params.permission or params.tool or '?',
    params.alwaysPattern or '*',
    k.reject_once,
    k.reject_always,
    k.feedback,
    reviewing and 'feedback' or 'reject+feedback'
  )
end

--- The path of `uri` as the request names it (one of `paths`), else relative to the root.
local function path_of(uri, params, root)
  local name = vim.uri_to_fname(uri)
  for _, path in ipairs(params.paths or {}) do
    if name == path or vim.endswith(name, '/' .. path) then
      return path
    end
  end
  if root and vim.startswith(name, root .. '/') then
    return name:sub(#root + 2)
  end
  return vim.fn.fnamemodify(name, ':.')
end

--- The files of a file change to review by hunk (`proposed`), or nil for anything else.
local function review_files(params, root)
  if type(params.proposed) ~= 'table' or #params.proposed == 0 then
    return nil
  end
  local files = {}
  for _, entry in ipairs(params.proposed) do
    if type(entry) ~= 'table' or type(entry.uri) ~= 'string' or type(entry.text) ~= 'string' then
      return nil
    end
    table.insert(files, review.file(entry.uri, path_of(entry.uri, params, root), entry.text))
  end
  return files
end

local marks = vim.api.nvim_create_namespace('totem.review')

--- The ask: the diff (by hunk, for a file change), and how it is answered.
local Ask = {}
Ask.__index = Ask

--- Fills the ask's buffer: the hunks of a file change with whether each is taken, else the
--- diff or the input.
function Ask:draw()
  local buf = self.buf
  local lines, ft
  if self.files then
    lines, self.hunks, self.headers = review.render(self.files)
    ft = 'diff'
  else
    lines, ft = body(self.params)
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = ft
  vim.api.nvim_buf_clear_namespace(buf, marks, 0, -1)
  for _, entry in ipairs(self.hunks or {}) do
    local text = entry.hunk.taken and { ' ✓ take ', 'DiffAdd' } or { ' ✗ leave ', 'DiffDelete' }
    vim.api.nvim_buf_set_extmark(buf, marks, entry.row, 0, { virt_text = { text }, virt_text_pos = 'eol' })
  end
  for file, row in pairs(self.headers or {}) do
    if file.edited then
      vim.api.nvim_buf_set_extmark(buf, marks, row + 1, 0, { virt_text = { { ' edited by you ', 'DiffChange' } } })
    end
  end
  return lines
end

--- Opens the floating window over the ask's buffer.
function Ask:show()
  local lines = self:draw()
  local params = self.params
  local title = ' Totem wants to: ' .. (params.title or params.tool or '?') .. ' '
  if self.session_title then
    title = (' %s · %s'):format(self.session_title, title:sub(2))
  end
  local foot = footer(params, self.files ~= nil)
  local width = math.max(vim.fn.strdisplaywidth(title), vim.fn.strdisplaywidth(foot))
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line) + 10)
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 4))
  local height = math.min(#lines, math.max(1, vim.o.lines - 6))
  local win = vim.api.nvim_open_win(self.buf, true, {
    relative = 'editor',
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    width = width,
    height = height,
    style = 'minimal',
    border = 'rounded',
    title = title,
    title_pos = 'center',
    footer = foot,
    footer_pos = 'center',
  })
  vim.wo[win].wrap = false
  self.win = win
  if self.hunks and self.hunks[1] then
    vim.api.nvim_win_set_cursor(win, { self.hunks[1].row + 1, 0 })
  end
  vim.api.nvim_create_autocmd('WinClosed', {
    pattern = tostring(win),
    once = true,
    callback = function()
      vim.schedule(function()
        -- Closed by hand (`:close`, another window's command): hidden, the question stays
        -- open (`:TotemPermission`). Closed to edit the proposal: the ask goes on.
        if self.win == win and not self.editing then
          self:hide()
        end
      end)
    end,
  })
end

--- Closes the window and keeps the question open: `:TotemPermission` (M.reopen) shows it again.
function Ask:hide()
  if self.answered then
    return
  end
  local win = self.win
  self.win = nil
  if M.current == self then
    M.current = nil
  end
  if win and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_win_close(win, true)
  end
  require('totem.client').notify('the question waits: :TotemPermission shows it again')
end

function Ask:finish(answer)
  if self.answered then
    return
  end
  self.answered = true
  open[self.params.sessionId] = nil
  if M.current == self then
    M.current = nil
  end
  self:close_edit()
  local win = self.win
  self.win = nil
  if win and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_win_close(win, true)
  end
  if vim.api.nvim_buf_is_valid(self.buf) then
    vim.api.nvim_buf_delete(self.buf, { force = true })
  end
  self.done(answer)
end

--- An allow: with the change as reviewed when the user left a hunk or edited a file (the chat
--- says what was taken).
function Ask:allow(outcome)
  local answer = { outcome = outcome }
  if self.files and review.changed(self.files) then
    answer.accepted = review.accepted(self.files)
    require('totem.chat').reviewed(self.params.sessionId, self.params.callId, review.describe(self.files))
  end
  self:finish(answer)
end

--- The hunk under the cursor (the last whose header is at or above it), and the ask's hunks.
function Ask:hunk_at_cursor()
  local row = vim.api.nvim_win_get_cursor(self.win)[1] - 1
  local found = nil
  for _, entry in ipairs(self.hunks or {}) do
    if entry.row <= row then
      found = entry
    end
  end
  return found or (self.hunks or {})[1]
end

function Ask:mark(taken)
  local entry = self:hunk_at_cursor()
  if not entry then
    return
  end
  entry.hunk.taken = taken
  local cursor = vim.api.nvim_win_get_cursor(self.win)
  self:draw()
  vim.api.nvim_win_set_cursor(self.win, cursor)
end

function Ask:move(delta)
  local row = vim.api.nvim_win_get_cursor(self.win)[1] - 1
  local rows = vim.tbl_map(function(entry)
    return entry.row
  end, self.hunks or {})
  local target = nil
  for i = delta > 0 and 1 or #rows, delta > 0 and #rows or 1, delta do
    if (delta > 0 and rows[i] > row) or (delta < 0 and rows[i] < row) then
      target = rows[i]
      break
    end
  end
  if target then
    vim.api.nvim_win_set_cursor(self.win, { target + 1, 0 })
  end
end

--- A diff window of the proposal's tab as Vim's own: the tab was opened from the chat's window,
--- whose window-local options (its foldexpr and foldtext, conceal, wrap) a new tab inherits.
--- Its winbar says which side it is. `path`: the proposal's file, nil for the file as it is.
local function plain_diff_window(win, path)
  local wo = vim.wo[win]
  wo.foldtext = 'foldtext()'
  wo.foldexpr = '0'
  wo.conceallevel = 0
  wo.linebreak = false
  wo.wrap = false
  wo.winbar = path and ('Proposal: %s  (:w takes it, q goes back)'):format(path) or 'As it is now'
end

--- Opens the proposal for the file under the cursor, as it would be accepted now, in a tab of
--- its own beside the file as it is (diff mode), labelled `Totem review: PATH` (tablabel.lua).
--- Writing it (`:w`) takes it as the user's version of the file; `q` goes back without it.
--- Either way the ask comes back.
function Ask:edit()
  local entry = self:hunk_at_cursor()
  local file = entry and entry.file or (self.files or {})[1]
  if not file then
    return
  end
  self.editing = true
  if self.win and vim.api.nvim_win_is_valid(self.win) then
    vim.api.nvim_win_close(self.win, true)
  end
  local text = review.accepted_text(file)
  local newline = text:sub(-1) == '\n'
  local function scratch(name, content, acwrite)
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].buftype = acwrite and 'acwrite' or 'nofile'
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].swapfile = false
    pcall(vim.api.nvim_buf_set_name, buf, name)
    local lines = vim.split(content, '\r?\n')
    if content:sub(-1) == '\n' then
      table.remove(lines)
    end
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modified = false
    vim.bo[buf].filetype = vim.filetype.match({ filename = file.path }) or ''
    return buf
  end
  local proposal = scratch('totem://proposal/' .. file.path, text, true)
  local original = scratch('totem://original/' .. file.path, file.original, false)
  vim.bo[original].modifiable = false
  vim.cmd.tabnew()
  local placeholder = vim.api.nvim_get_current_buf()
  vim.api.nvim_win_set_buf(0, proposal)
  vim.cmd.diffthis()
  vim.cmd('leftabove vsplit')
  vim.api.nvim_win_set_buf(0, original)
  vim.cmd.diffthis()
  vim.cmd.wincmd('l')
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    plain_diff_window(win, vim.api.nvim_win_get_buf(win) == proposal and file.path)
  end
  if vim.api.nvim_buf_is_valid(placeholder) then
    vim.api.nvim_buf_delete(placeholder, { force = true })
  end
  self.edit_tab = vim.api.nvim_get_current_tabpage()
  require('totem.tablabel').name(self.edit_tab, 'Totem review: ' .. file.path)
  self.edit_bufs = { proposal, original }
  vim.api.nvim_create_autocmd('BufWriteCmd', {
    buffer = proposal,
    callback = function()
      local written = table.concat(vim.api.nvim_buf_get_lines(proposal, 0, -1, false), '\n') .. (newline and '\n' or '')
      vim.bo[proposal].modified = false
      if written ~= text then
        review.set_target(file, written)
        file.edited = true
      end
      vim.schedule(function()
        self:back()
      end)
    end,
  })
  for _, buf in ipairs(self.edit_bufs) do
    vim.keymap.set('n', 'q', function()
      self:back()
    end, { buffer = buf, nowait = true, desc = 'Totem: back to the permission window' })
  end
  vim.api.nvim_create_autocmd('TabClosed', {
    once = true,
    callback = function()
      vim.schedule(function()
        if self.editing and not vim.api.nvim_tabpage_is_valid(self.edit_tab) then
          self:back()
        end
      end)
    end,
  })
end

function Ask:close_edit()
  local tab = self.edit_tab
  self.edit_tab = nil
  if tab and vim.api.nvim_tabpage_is_valid(tab) and #vim.api.nvim_list_tabpages() > 1 then
    vim.cmd.tabclose(vim.api.nvim_tabpage_get_number(tab))
  end
  for _, buf in ipairs(self.edit_bufs or {}) do
    if vim.api.nvim_buf_is_valid(buf) then
      vim.api.nvim_buf_delete(buf, { force = true })
    end
  end
  self.edit_bufs = nil
end

--- Back from editing the proposal: the ask again, with the file's hunks as edited.
function Ask:back()
  if not self.editing or self.answered then
    return
  end
  self:close_edit()
  self.editing = false
  self:show()
end

--- The title of the session that asks, shortened for the window's border, when a chat shows it.
local function session_title(session)
  local chat = require('totem.chat').chat_of(session)
  local title = chat and chat.title
  if type(title) ~= 'string' or title == '' then
    return nil
  end
  return vim.fn.strcharlen(title) > 40 and (vim.fn.strcharpart(title, 0, 39) .. '…') or title
end

--- Brings the chat of `session` forward (shown in the chat window, opened when closed), so the
--- user sees which conversation asks.
local function bring_forward(session)
  local chat_module = require('totem.chat')
  local chat = chat_module.chat_of(session)
  if not chat then
    return
  end
  if chat_module.state ~= chat then
    chat_module.show(chat)
  end
  if not chat_module.is_open() then
    chat_module.open(false)
  end
end

--- Shows again the question put aside (Esc, `q`): the current chat's, else any that waits.
function M.reopen()
  local chat = require('totem.chat').state
  local ask = open[chat.session or ''] or select(2, next(open))
  if not ask then
    require('totem.client').notify('no question waits')
    return
  end
  if ask.win and vim.api.nvim_win_is_valid(ask.win) then
    vim.api.nvim_set_current_win(ask.win)
  elseif not ask.editing then
    bring_forward(ask.params.sessionId)
    ask:show()
  end
  M.current = ask
end

--- Opens the floating window; `done(answer)` gets the totem/permission answer. `root`: the
--- project's, for the paths of the files shown.
function M.open_window(params, done, root, client_id)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'hide'
  local ask = setmetatable({ params = params, done = done, buf = buf, client_id = client_id }, Ask)
  ask.session_title = session_title(params.sessionId)
  ask.files = review_files(params, root)
  ask:show()
  local function map(lhs, fn)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true })
  end
  local k = M.keys
  map(k.allow_once, function()
    ask:allow('allow_once')
  end)
  map(k.allow_always, function()
    ask:allow('allow_always')
  end)
  for i, choice in ipairs(params.choices or {}) do
    map(tostring(i), function()
      ask:finish({ outcome = 'allow_once', choice = choice.id })
    end)
  end
  map(k.reject_once, function()
    ask:finish({ outcome = 'reject_once' })
  end)
  map(k.reject_always, function()
    ask:finish({ outcome = 'reject_always' })
  end)
  map(k.feedback, function()
    vim.ui.input({ prompt = 'Tell the agent why (or what instead): ' }, function(text)
      if text then
        ask:finish({ outcome = 'reject_once', feedback = text })
      end
    end)
  end)
  -- Only `r` rejects: `q` and Esc, easy to press by accident, put the question aside.
  map('q', function()
    ask:hide()
  end)
  map('<Esc>', function()
    ask:hide()
  end)
  if ask.files then
    map(k.take, function()
      ask:mark(true)
    end)
    map(k.leave, function()
      ask:mark(false)
    end)
    map(k.next_hunk, function()
      ask:move(1)
    end)
    map(k.prev_hunk, function()
      ask:move(-1)
    end)
    map(k.edit, function()
      ask:edit()
    end)
  end
  M.current = ask
  open[params.sessionId] = ask
  return ask.win
end

--- totem/permission
function M.permission(params, ctx)
  if type(params) ~= 'table' then
    return { outcome = 'reject_once' }
  end
  local c = ctx and vim.lsp.get_client_by_id(ctx.client_id)
  require('totem.notices').ask(params.sessionId, 'waits for your permission: ' .. tostring(params.title or ''))
  bring_forward(params.sessionId)
  return await(function(done)
    M.open_window(params, done, c and c.root_dir, ctx and ctx.client_id)
  end)
end

--- Closes the prompt of a session whose turn ended (its answer would be ignored anyway).
function M.close_for(session)
  local ask = open[session]
  if ask then
    ask:finish({ outcome = 'reject_once' })
  end
end

--- Closes the prompts of a server that stopped (nobody waits for their answers).
function M.close_for_client(client_id)
  for _, ask in pairs(vim.tbl_values(open)) do
    if ask.client_id == client_id then
      ask:finish({ outcome = 'reject_once' })
    end
  end
end

--- totem/question: options with vim.ui.select (plus a free answer), else vim.ui.input. As a
--- permission question, it names its session (the chat's title) and brings its chat forward.
function M.question(params)
  local question = (params and params.question) or '?'
  local options = (params and params.options) or {}
  local session = params and params.sessionId
  require('totem.notices').ask(session, 'asks: ' .. question)
  local title = session_title(session)
  local asks = (title and (title .. ' · ') or '') .. 'Totem asks: '
  bring_forward(session)
  local answer = await(function(done)
    local function free()
      vim.ui.input({ prompt = asks .. question .. ' ' }, function(text)
        done(text)
      end)
    end
    if #options == 0 then
      return free()
    end
    local items = vim.list_extend(vim.deepcopy(options), { 'Other…' })
    vim.ui.select(items, { prompt = asks .. question }, function(choice, idx)
      if choice == nil then
        done(nil)
      elseif idx == #items then
        vim.schedule(free)
      else
        done(choice)
      end
    end)
  end)
  return { answer = answer == nil and vim.NIL or answer }
end

--- totem/trust
function M.trust(params)
  local reasons = table.concat((params and params.reasons) or {}, ', ')
  local prompt = ('Trust the project %s? Its config sets: %s.'):format((params and params.root) or '?', reasons)
  local choice = await(function(done)
    vim.ui.select({ 'Trust', 'Do not trust' }, { prompt = prompt }, function(item)
      done(item)
    end)
  end)
  return { trusted = choice == 'Trust' }
end

return M
