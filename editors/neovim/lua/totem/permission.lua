-- The server's questions: totem/permission (a floating window with the diff), totem/question
-- and totem/trust (vim.ui.select / vim.ui.input).
--
-- Neovim runs each server request handler in a coroutine (vim/lsp/rpc.lua), so a handler can
-- yield until the user answers and then return the answer.
local M = {}

M.keys = {
  allow_once = 'a',
  allow_always = 'A',
  reject_once = 'r',
  reject_always = 'R',
  feedback = 'f',
}

-- sessionId -> { close = fn } of the open permission windows.
local open = {}
M.current = nil -- the open permission window: { win, buf, params }

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
  return lines, 'markdown'
end

local function footer(params)
  local k = M.keys
  return (' %s allow · %s always (%s %s) · %s reject · %s never · %s reject+feedback '):format(
    k.allow_once,
    k.allow_always,
    params.permission or params.tool or '?',
    params.alwaysPattern or '*',
    k.reject_once,
    k.reject_always,
    k.feedback
  )
end

--- Opens the floating window; `done(answer)` gets the totem/permission answer.
function M.open_window(params, done)
  local lines, ft = body(params)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = ft
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  local title = ' Totem wants to: ' .. (params.title or params.tool or '?') .. ' '
  local foot = footer(params)
  local width = math.max(vim.fn.strdisplaywidth(title), vim.fn.strdisplaywidth(foot))
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 4))
  local height = math.min(#lines, math.max(1, vim.o.lines - 6))
  local win = vim.api.nvim_open_win(buf, true, {
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
  local answered = false
  local function finish(answer)
    if answered then
      return
    end
    answered = true
    open[params.sessionId] = nil
    M.current = nil
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
    done(answer)
  end
  local function map(lhs, fn)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true })
  end
  local k = M.keys
  map(k.allow_once, function()
    finish({ outcome = 'allow_once' })
  end)
  map(k.allow_always, function()
    finish({ outcome = 'allow_always' })
  end)
  map(k.reject_once, function()
    finish({ outcome = 'reject_once' })
  end)
  map(k.reject_always, function()
    finish({ outcome = 'reject_always' })
  end)
  map(k.feedback, function()
    vim.ui.input({ prompt = 'Tell the agent why (or what instead): ' }, function(text)
      if text then
        finish({ outcome = 'reject_once', feedback = text })
      end
    end)
  end)
  map('q', function()
    finish({ outcome = 'reject_once' })
  end)
  map('<Esc>', function()
    finish({ outcome = 'reject_once' })
  end)
  vim.api.nvim_create_autocmd('WinClosed', {
    pattern = tostring(win),
    once = true,
    callback = function()
      vim.schedule(function()
        finish({ outcome = 'reject_once' })
      end)
    end,
  })
  M.current = { win = win, buf = buf, params = params, finish = finish }
  open[params.sessionId] = { close = finish }
  return win
end

--- totem/permission
function M.permission(params)
  if type(params) ~= 'table' then
    return { outcome = 'reject_once' }
  end
  return await(function(done)
    M.open_window(params, done)
  end)
end

--- Closes the prompt of a session whose turn ended (its answer would be ignored anyway).
function M.close_for(session)
  local entry = open[session]
  if entry then
    entry.close({ outcome = 'reject_once' })
  end
end

--- totem/question: options with vim.ui.select (plus a free answer), else vim.ui.input.
function M.question(params)
  local question = (params and params.question) or '?'
  local options = (params and params.options) or {}
  local answer = await(function(done)
    local function free()
      vim.ui.input({ prompt = question .. ' ' }, function(text)
        done(text)
      end)
    end
    if #options == 0 then
      return free()
    end
    local items = vim.list_extend(vim.deepcopy(options), { 'Other…' })
    vim.ui.select(items, { prompt = 'Totem asks: ' .. question }, function(choice, idx)
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
