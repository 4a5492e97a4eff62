-- User commands (:Totem*) and the global mappings.
local client = require('totem.client')
local chat = require('totem.chat')

local M = {}

--- The context of a message: the current file buffer, and the lines line1..line2 when given.
local function context(bufnr, line1, line2)
  if vim.bo[bufnr].buftype ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then
    return nil
  end
  local ctx = { uri = vim.uri_from_bufnr(bufnr) }
  if line1 and line2 then
    -- Whole lines: ending at character 0 of the line after the last one.
    ctx.range = { start = { line = line1 - 1, character = 0 }, ['end'] = { line = line2, character = 0 } }
  end
  return ctx
end

--- :TotemAsk [text]  (with a range: the lines are the context)
function M.ask(opts)
  local bufnr = vim.api.nvim_get_current_buf()
  local ctx
  if opts and opts.range and opts.range > 0 then
    ctx = context(bufnr, opts.line1, opts.line2)
  else
    ctx = context(bufnr)
  end
  local text = opts and opts.args or ''
  if text ~= '' then
    chat.send(text, ctx, bufnr)
  else
    chat.prompt(ctx, bufnr)
  end
end

local function session_client()
  local c = chat.state.client_id and vim.lsp.get_client_by_id(chat.state.client_id)
  if not c or not chat.state.session then
    client.notify('no session in the chat yet', vim.log.levels.WARN)
    return nil
  end
  return c
end

local function report_files(what, result)
  local files = (result and result.files) or {}
  if #files == 0 then
    client.notify('nothing to ' .. what)
    return
  end
  local lines = {}
  for _, f in ipairs(files) do
    table.insert(lines, ('%s %s%s'):format(f.action, f.path, f.reason and (' (' .. f.reason .. ')') or ''))
  end
  client.notify(what .. ': ' .. table.concat(lines, ', '))
  -- Files that were not open were restored on disk.
  pcall(vim.cmd, 'silent! checktime')
end

local function undo_redo(method, what)
  local c = session_client()
  if not c then
    return
  end
  client.request(c, method, { sessionId = chat.state.session }, function(err, result)
    if err then
      client.notify(what .. ': ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    report_files(what, result)
  end)
end

function M.undo()
  undo_redo('totem/undo', 'undo')
end

function M.redo()
  undo_redo('totem/redo', 'redo')
end

--- /compact: the chat's session summarised into a checkpoint now (totem/compact).
function M.compact()
  local c = session_client()
  if not c then
    return
  end
  client.request(c, 'totem/compact', { sessionId = chat.state.session }, function(err, result)
    if err then
      client.notify('compact: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif result and result.compacted then
      client.notify(('compacted: %d messages summarised; the next turn starts from the summary'):format(result.messages))
    else
      client.notify('nothing new to compact')
    end
  end)
end

function M.sessions()
  local c = client.get()
  if not c then
    client.notify('no Totem server is running', vim.log.levels.ERROR)
    return
  end
  client.request(c, 'totem/sessions', vim.empty_dict(), function(err, sessions)
    if err then
      client.notify('sessions: ' .. (err.message or ''), vim.log.levels.ERROR)
      return
    end
    if not sessions or #sessions == 0 then
      client.notify('no sessions yet')
      return
    end
    vim.ui.select(sessions, {
      prompt = 'Totem sessions',
      format_item = function(s)
        local title = (s.title ~= nil and s.title ~= '') and s.title or '(untitled)'
        local shown = chat.chat_of(s.sessionId)
        local where = shown == chat.state and '  (this chat)' or (shown and '  (open)' or '')
        return ('%s  %s  [%s]%s'):format(os.date('%Y-%m-%d %H:%M', math.floor(s.updatedAt or 0)), title, s.model or '?', where)
      end,
    }, function(choice)
      if not choice then
        return
      end
      client.request(c, 'totem/session', { sessionId = choice.sessionId }, function(err2, session)
        if err2 then
          client.notify('session: ' .. (err2.message or ''), vim.log.levels.ERROR)
          return
        end
        chat.open_session(session, c.id, choice.model)
      end)
    end)
  end)
end

--- The chat's model (`key` model) or mode (`key` mode): the session's (totem/setModel,
--- totem/setMode); before the chat has a session, its first turn's, which then stays the
--- session's (chat.lua: `wanted`).
local function set_for_chat(c, key, value)
  local state = chat.state
  local function done(chosen)
    state[key] = chosen
    chat.with(state, chat.update_winbar)
    client.notify(key .. ': ' .. chosen)
  end
  if not state.session then
    state.wanted[key] = value
    return done(value)
  end
  local method = key == 'model' and 'totem/setModel' or 'totem/setMode'
  client.request(c, method, { sessionId = state.session, [key] = value }, function(err, result)
    if err then
      client.notify(key .. ': ' .. (err.message or ''), vim.log.levels.ERROR)
      return
    end
    done(result and result[key] or value)
  end)
end

local function set_model(c, model)
  set_for_chat(c, 'model', model)
end

M.MODES = { 'build', 'plan' }

--- :TotemMode [build|plan]: the chat's session's mode (plan refuses changes to the project).
function M.mode(opts)
  local c = client.get()
  if not c then
    client.notify('no Totem server is running', vim.log.levels.ERROR)
    return
  end
  local arg = opts and opts.args or ''
  if arg ~= '' then
    if not vim.tbl_contains(M.MODES, arg) then
      return client.notify('mode: build or plan, not ' .. arg, vim.log.levels.ERROR)
    end
    return set_for_chat(c, 'mode', arg)
  end
  vim.ui.select(M.MODES, { prompt = 'Totem mode' }, function(choice)
    if choice then
      set_for_chat(c, 'mode', choice)
    end
  end)
end

-- Seed 004: 20 and 60 for a predictable ceiling, 0 for none; nil leaves the config's.
M.STEP_PRESETS = {
  { steps = 20, label = '20 steps' },
  { steps = 60, label = '60 steps' },
  { steps = 0, label = 'no cap' },
  { steps = nil, label = "the config's max_steps" },
}

local function set_steps(steps)
  local options = client.options
  options.max_steps = steps
  client.settings_changed(options)
  client.notify('step limit: ' .. (steps == nil and "the config's" or steps == 0 and 'no cap' or tostring(steps)))
end

--- :TotemSteps [20|60|0|default]: the step limit of the next turns (every server's editor settings).
function M.steps(opts)
  local arg = opts and opts.args or ''
  if arg == 'default' then
    return set_steps(nil)
  end
  if arg ~= '' then
    local steps = tonumber(arg)
    if not steps or steps < 0 or steps ~= math.floor(steps) then
      return client.notify('steps: 20, 60, 0 (no cap), another whole number or default, not ' .. arg, vim.log.levels.ERROR)
    end
    return set_steps(steps)
  end
  vim.ui.select(M.STEP_PRESETS, {
    prompt = 'Totem step limit',
    format_item = function(preset)
      return preset.label
    end,
  }, function(choice)
    if choice then
      set_steps(choice.steps)
    end
  end)
end

local SHARES = {
  { 'system', 'system prompt and tools' },
  { 'history', 'history' },
  { 'toolResults', 'tool results' },
  { 'attachments', 'attachments' },
  { 'output', 'kept for the answer' },
}

--- :TotemContext: what the session's last request took of the window, share by share.
function M.context()
  local context = chat.state.context
  local line = chat.context_line(context)
  if not line then
    return client.notify('no request yet in this chat')
  end
  local parts = {}
  for _, share in ipairs(SHARES) do
    local value = type(context.breakdown) == 'table' and context.breakdown[share[1]]
    if type(value) == 'number' then
      table.insert(parts, ('%s %d'):format(share[2], value))
    end
  end
  client.notify('context: ' .. line .. (#parts > 0 and (': ' .. table.concat(parts, ', ')) or ''))
end

--- The picker's last item: a model the providers' lists leave out, typed as provider/model.
local TYPED = { typed = true }

--- :TotemModel [provider/model]: without one, a pick of totem/models, or one typed.
function M.model(opts)
  local c = client.get()
  if not c then
    client.notify('no Totem server is running', vim.log.levels.ERROR)
    return
  end
  local arg = opts and opts.args or ''
  if arg ~= '' then
    return set_model(c, arg)
  end
  client.request(c, 'totem/models', vim.empty_dict(), function(err, models)
    if err then
      client.notify('models: ' .. (err.message or ''), vim.log.levels.ERROR)
      return
    end
    if not models or #models == 0 then
      client.notify('the configured providers list no models')
      return
    end
    local items = vim.list_extend(vim.list_slice(models), { TYPED })
    vim.ui.select(items, {
      prompt = 'Totem model',
      format_item = function(m)
        if m.typed then
          return 'Other: type provider/model…'
        end
        local window = m.contextWindow ~= vim.NIL and m.contextWindow and (' ' .. m.contextWindow .. ' tokens') or ''
        return m.id .. window
      end,
    }, function(choice)
      if choice and choice.typed then
        vim.ui.input({ prompt = 'Totem model (provider/model): ' }, function(typed)
          if typed and vim.trim(typed) ~= '' then
            set_model(c, vim.trim(typed))
          end
        end)
      elseif choice then
        set_model(c, choice.id)
      end
    end)
  end)
end

--- Opens ``file`` to edit, in the window before the chat's when the chat has the focus.
local function edit_file(file)
  if chat.is_open() and vim.api.nvim_get_current_buf() == chat.buf() then
    vim.cmd.wincmd('p') -- not in the chat's window
  end
  vim.cmd.edit(vim.fn.fnameescape(file))
end

--- A request about the project of the buffer the user is in: `params` with its `uri` (when it
--- has one) sent to the buffer's server; `cb(err, result)`.
local function project_request(method, params, cb)
  local bufnr = vim.api.nvim_get_current_buf()
  local c = client.get(bufnr)
  if not c then
    client.notify('no Totem server is running', vim.log.levels.ERROR)
    return
  end
  local ctx = context(bufnr)
  if ctx then
    params.uri = ctx.uri
  end
  client.request(c, method, next(params) and params or vim.empty_dict(), cb)
end

--- The project's list `method` answers (totem/agents, totem/hooks) for the buffer the user is
--- in, given to `on_list`; `empty`: what to say when there is none.
local function with_project_list(method, empty, on_list)
  project_request(method, {}, function(err, list)
    if err then
      client.notify(method:gsub('^totem/', '') .. ': ' .. (err.message or ''), vim.log.levels.ERROR)
    elseif not list or #list == 0 then
      client.notify(empty)
    else
      on_list(list)
    end
  end)
end

--- :TotemAgents: the agents the `task` tool can start (totem/agents, with their source); the
--- one chosen is opened to edit (its Markdown file).
function M.agents()
  with_project_list('totem/agents', 'no agents', function(agents)
    vim.ui.select(agents, {
      prompt = 'Totem agents',
      format_item = function(a)
        return ('%s  [%s]  %s'):format(a.name, a.source, a.description or '')
      end,
    }, function(choice)
      if choice and type(choice.file) == 'string' then
        edit_file(choice.file)
      end
    end)
  end)
end

--- One hook as :TotemHooks lists it: "EVENT [matcher] command (source) active|ignored: why"
--- (matcher "*" when it takes every one).
local function hook_line(hook)
  local matcher = type(hook.matcher) == 'string' and hook.matcher or '*'
  local state = hook.active and 'active' or ('ignored: ' .. tostring(hook.ignored ~= vim.NIL and hook.ignored or ''))
  return ('%s [%s] %s (%s) %s'):format(hook.event, matcher, hook.command, hook.source, state)
end

--- :TotemHooks: the hooks the config files declare (totem/hooks), in the order they run, each
--- with its file and whether it runs; the one chosen opens its file ("editor settings" is none).
function M.hooks()
  with_project_list('totem/hooks', 'No hooks are configured (see docs/config.md, Hooks)', function(hooks)
    vim.ui.select(hooks, { prompt = 'Totem hooks', format_item = hook_line }, function(choice)
      if not choice then
        return
      end
      -- The source is written as users write it (~/.config/...), or "editor settings".
      local file = vim.fs.normalize(choice.source)
      if vim.fn.filereadable(file) == 1 then
        edit_file(file)
      else
        client.notify(('that hook is in the %s, not a file'):format(choice.source))
      end
    end)
  end)
end

--- :TotemMcpLogin NAME: log in to the MCP server NAME that wants an OAuth login (totem/mcpLogin).
--- The server asks Neovim to open the authorization page in the browser (window/showDocument,
--- which Neovim's own handler opens with vim.ui.open); the request answers once the login is done.
function M.mcp_login(opts)
  local name = opts.args
  client.notify(('logging in to the MCP server %s: finish in the browser'):format(name))
  project_request('totem/mcpLogin', { name = name }, function(err, result)
    if err then
      client.notify('MCP login: ' .. (err.message or ''), vim.log.levels.ERROR)
      return
    end
    client.notify(('logged in to the MCP server %s (%d tools)'):format(result.server, #(result.tools or {})))
  end)
end

--- :TotemCommands: the slash commands with their descriptions (totem/commands); the one chosen
--- starts the message input with "/NAME " (/undo and /compact run at once).
function M.slash_commands()
  local c = client.get()
  if not c then
    client.notify('no Totem server is running', vim.log.levels.ERROR)
    return
  end
  client.request(c, 'totem/commands', vim.empty_dict(), function(err, commands)
    if err then
      client.notify('commands: ' .. (err.message or ''), vim.log.levels.ERROR)
      return
    end
    vim.ui.select(commands or {}, {
      prompt = 'Totem commands',
      format_item = function(command)
        return ('/%s  [%s]  %s'):format(command.name, command.source, command.description or '')
      end,
    }, function(choice)
      if not choice then
        return
      end
      if choice.name == 'undo' or choice.name == 'compact' then
        return M[choice.name]()
      end
      chat.prompt(nil, nil, '/' .. choice.name .. ' ')
    end)
  end)
end

function M.setup(options)
  local cmd = vim.api.nvim_create_user_command
  cmd('TotemAsk', M.ask, { nargs = '*', range = true, desc = 'Ask Totem (the range is the context)' })
  cmd('TotemAttach', function(opts)
    chat.attach(opts.args)
  end, { nargs = 1, complete = 'file', desc = "Attach an image to the chat's next message" })
  cmd('TotemChat', function()
    chat.toggle()
  end, { desc = 'Open or close the Totem chat' })
  cmd('TotemNew', function()
    chat.new()
    chat.open(true)
  end, { desc = 'Start a new Totem session in a chat of its own' })
  cmd('TotemAbort', function()
    chat.abort()
  end, { desc = 'Stop the running Totem turn' })
  cmd('TotemQueue', function()
    require('totem.queue').pick(chat.state, function(text, done)
      require('totem.input').open({ prompt = 'Queued message> ', default = text, on_submit = done })
    end)
  end, { desc = 'Edit or remove a message queued while the turn runs' })
  cmd('TotemPermission', function()
    require('totem.permission').reopen()
  end, { desc = 'Show again the permission question put aside (Esc, q)' })
  cmd('TotemUndo', M.undo, { desc = "Undo the files of the session's last turn" })
  cmd('TotemRedo', M.redo, { desc = 'Redo the last undone turn' })
  cmd('TotemRetry', function()
    chat.retry()
  end, { desc = "Try the session's failed last turn again" })
  cmd('TotemSessions', M.sessions, { desc = 'Switch to a Totem session (a chat each)' })
  cmd('TotemCommands', M.slash_commands, { desc = 'Pick a Totem slash command' })
  cmd('TotemAgents', M.agents, { desc = 'Pick a Totem agent and edit its file' })
  cmd('TotemHooks', M.hooks, { desc = "List Totem's hooks and whether they run; edit one's file" })
  cmd('TotemMcpLogin', M.mcp_login, { nargs = 1, desc = 'Log in to an MCP server that wants an OAuth login' })
  cmd('TotemModel', M.model, { nargs = '?', desc = "Pick the chat's model" })
  cmd('TotemMode', M.mode, {
    nargs = '?',
    complete = function()
      return M.MODES
    end,
    desc = "Set the chat's mode: build or plan",
  })
  cmd('TotemSteps', M.steps, {
    nargs = '?',
    complete = function()
      return { '20', '60', '0', 'default' }
    end,
    desc = 'Set the step limit of a turn: 20, 60, 0 (no cap) or the config default',
  })
  cmd('TotemContext', M.context, { desc = 'What the last request took of the context window' })
  cmd('TotemTools', function()
    require('totem.tools').open()
  end, { desc = "The tools the chat's model has, and why fewer than all" })
  cmd('TotemRewind', function(opts)
    require('totem.conversation').rewind(not opts.bang)
  end, { bang = true, desc = 'Rewind the conversation (and, without !, the files) to before a message' })
  cmd('TotemRegenerate', function()
    require('totem.conversation').regenerate()
  end, { desc = 'Answer the message under the cursor (or the last) again' })
  cmd('TotemFork', function()
    require('totem.conversation').fork()
  end, { desc = 'A new session up to the message under the cursor (else all of this one), in a chat of its own' })
  cmd('TotemRestart', function()
    require('totem.restart').restart_now()
  end, { desc = 'Restart the Totem server; the chats take up their sessions' })
  cmd('TotemJobs', function()
    require('totem.jobs').open()
  end, { desc = "List Totem's background jobs (x stops one)" })
  cmd('TotemJobStop', function(opts)
    require('totem.jobs').stop_command(opts)
  end, {
    nargs = '?',
    complete = function(lead)
      return require('totem.jobs').complete(lead)
    end,
    desc = 'Stop a Totem background job',
  })

  local keys = options.keymaps
  if keys then
    if keys.ask then
      vim.keymap.set('n', keys.ask, '<Cmd>TotemAsk<CR>', { desc = 'Totem: ask' })
      vim.keymap.set('x', keys.ask, ':TotemAsk<CR>', { desc = 'Totem: ask about the selection', silent = true })
    end
    if keys.chat then
      vim.keymap.set('n', keys.chat, '<Cmd>TotemChat<CR>', { desc = 'Totem: chat' })
    end
    if keys.abort then
      vim.keymap.set('n', keys.abort, '<Cmd>TotemAbort<CR>', { desc = 'Totem: stop' })
    end
  end
end

return M
