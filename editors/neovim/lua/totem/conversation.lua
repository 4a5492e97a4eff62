-- The conversation of the current chat as a tree (docs/protocol.md): :TotemRewind (totem/rewind,
-- conflict-aware through its dryRun), :TotemRegenerate (totem/regenerate), `[v` / `]v` on an
-- answer (totem/variant) and :TotemFork (totem/fork). Each acts on a request the chat shows (a
-- "## You"), matched to the session's stored requests by order; the chat is drawn again from the
-- session afterwards (a fork: the new session, in a chat of its own).
local client = require('totem.client')
local chat = require('totem.chat')

local M = {}

local function fail(what, err)
  client.notify(what .. ': ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
end

--- The current chat's server and session, or nil with a warning; nil too while a turn runs.
local function ready()
  local state = chat.state
  local c = state.client_id and vim.lsp.get_client_by_id(state.client_id)
  if not c or not state.session then
    client.notify('no session in the chat yet', vim.log.levels.WARN)
    return nil
  end
  if state.busy or state.pending then
    client.notify('a turn is still running (:TotemAbort stops it)', vim.log.levels.WARN)
    return nil
  end
  return c, state
end

--- Fetches the session and calls `fn(requests, session)` with the chat as it was asked from.
--- When the chat does not show the session's requests one for one (a message that failed
--- before it was stored), it is drawn again from the session first.
local function with_requests(c, state, fn)
  client.request(c, 'totem/session', { sessionId = state.session }, function(err, session)
    if err then
      return fail('session', err)
    end
    chat.with(state, function()
      local requests = chat.requests(session)
      if #chat.request_rows() ~= #requests then
        chat.show_session(session, c.id, state.model)
      end
      fn(requests, session)
    end)
  end)
end

--- Moves the cursor of the chat's window to the line of request `index`.
local function focus_request(state, index)
  chat.with(state, function()
    local row = chat.request_rows()[index]
    local win = vim.fn.bufwinid(chat.buf())
    if row and win ~= -1 then
      vim.api.nvim_win_set_cursor(win, { row + 1, 0 })
    end
  end)
end

local function first_line(text)
  return (vim.split(text or '', '\n', { plain = true })[1] or '')
end

local function report(result)
  local files = (result and result.files) or {}
  local lines = {}
  for _, f in ipairs(files) do
    table.insert(lines, ('%s %s%s'):format(f.action, f.path, f.reason and (' (' .. f.reason .. ')') or ''))
  end
  local what = ('rewound %d message%s'):format(#(result.rewound or {}), #(result.rewound or {}) == 1 and '' or 's')
  client.notify(#lines > 0 and (what .. '; files: ' .. table.concat(lines, ', ')) or what)
  pcall(vim.cmd, 'silent! checktime') -- files that were not open were restored on disk
end

--- The rewind itself, once the user chose what happens to files changed since.
local function rewind(c, state, params)
  client.request(c, 'totem/rewind', params, function(err, result)
    if err then
      return fail('rewind', err)
    end
    report(result)
    chat.with(state, chat.reload)
  end)
end

--- With `files`, asks first what would happen (dryRun): files the user changed since the turn
--- are named, and overwritten only when the user says so.
local function rewind_to(c, state, request, files)
  local params = { sessionId = state.session, messageId = request.id, files = files }
  if not files then
    return rewind(c, state, params)
  end
  client.request(c, 'totem/rewind', vim.tbl_extend('force', params, { dryRun = true }), function(err, result)
    if err then
      return fail('rewind', err)
    end
    local conflicts = {}
    for _, f in ipairs(result.files or {}) do
      if f.action == 'conflict' then
        table.insert(conflicts, f.path)
      end
    end
    if #conflicts == 0 then
      return rewind(c, state, params)
    end
    local choices = { 'Overwrite them', 'Leave them as they are' }
    vim.ui.select(choices, {
      prompt = 'Changed since that turn: ' .. table.concat(conflicts, ', '),
    }, function(choice)
      if choice == choices[1] then
        rewind(c, state, vim.tbl_extend('force', params, { overwrite = conflicts }))
      elseif choice == choices[2] then
        rewind(c, state, params)
      end
    end)
  end)
end

--- :TotemRewind[!]: the conversation goes back to before a message the user picks (the newest
--- first) and, without the bang, the files go back to their state then.
function M.rewind(files)
  local c, state = ready()
  if not c then
    return
  end
  with_requests(c, state, function(requests)
    if #requests == 0 then
      return client.notify('nothing to rewind')
    end
    local items = {}
    for i = #requests, 1, -1 do
      table.insert(items, { index = i, request = requests[i] })
    end
    vim.ui.select(items, {
      prompt = files and 'Rewind the conversation and the files to before' or 'Rewind the conversation to before',
      format_item = function(item)
        return ('%d. %s'):format(item.index, first_line(item.request.text))
      end,
    }, function(choice)
      if choice then
        rewind_to(c, state, choice.request, files)
      end
    end)
  end)
end

--- :TotemRegenerate: a new answer to the message under the cursor (else the last), in its place;
--- the earlier answer stays a variant (`[v`).
function M.regenerate()
  local c, state = ready()
  if not c then
    return
  end
  local index = chat.with(state, chat.request_at_cursor)
  with_requests(c, state, function(requests)
    local request = requests[index or #requests]
    if not request then
      return client.notify('no message to answer again', vim.log.levels.WARN)
    end
    chat.cut_after_request(index or #requests)
    chat.request_turn(c, 'totem/regenerate', { sessionId = state.session, messageId = request.id }, function(err)
      if err then
        fail('regenerate', err)
      end
      chat.reload(function()
        focus_request(state, index or #requests)
      end)
    end)
  end)
end

--- `]v` (delta 1) / `[v` (-1) in the chat: the conversation follows the next or previous answer
--- to the message under the cursor (totem/variant), drawn again.
function M.switch_variant(delta)
  local c, state = ready()
  if not c then
    return
  end
  local index = chat.with(state, chat.request_at_cursor)
  with_requests(c, state, function(requests)
    local request = index and requests[index]
    if not request or not request.variant then
      return client.notify('this message has one answer (:TotemRegenerate makes another)')
    end
    local count = request.variant.count
    local target = (request.variant.index + delta) % count
    local params = { sessionId = state.session, messageId = request.id, index = target }
    client.request(c, 'totem/variant', params, function(err)
      if err then
        return fail('variant', err)
      end
      chat.with(state, chat.reload, function()
        focus_request(state, index)
      end)
    end)
  end)
end

--- The id of the last stored message of `request`'s exchange in `session`: its answer's last,
--- the message before the next request the chat shows (or the conversation's last).
local function exchange_end(session, requests, request)
  local starts = {}
  for _, r in ipairs(requests) do
    starts[r.id] = true
  end
  local last, inside = nil, false
  for _, message in ipairs(session.messages or {}) do
    if starts[message.id] then
      if inside then
        break
      end
      inside = message.id == request.id
    end
    if inside then
      last = message.id
    end
  end
  return last
end

--- :TotemFork: a new session (totem/fork) holding the conversation up to the message under the
--- cursor in the chat and its answer; elsewhere, the conversation as it stands. Its chat is shown,
--- as :TotemSessions shows one, and the user is told which session it is a fork of.
function M.fork()
  local c, state = ready()
  if not c then
    return
  end
  local in_chat = vim.api.nvim_get_current_buf() == chat.with(state, chat.buf)
  local index = in_chat and chat.with(state, chat.request_at_cursor) or nil
  with_requests(c, state, function(requests, session)
    local request = index and requests[index]
    local params = { sessionId = state.session, messageId = request and exchange_end(session, requests, request) or nil }
    client.request(c, 'totem/fork', params, function(err, result)
      if err then
        return fail('fork', err)
      end
      client.request(c, 'totem/session', { sessionId = result.sessionId }, function(err2, forked)
        if err2 then
          return fail('session', err2)
        end
        chat.open_session(forked, c.id, forked.model or state.model)
        local title = (session.title ~= nil and session.title ~= '') and (' "' .. session.title .. '"') or ''
        local upto = request and ('up to message %d'):format(index) or 'as it stood'
        client.notify(('this chat is a fork of %s%s, %s'):format(state.session, title, upto))
      end)
    end)
  end)
end

return M
