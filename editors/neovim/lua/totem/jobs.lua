-- Background jobs (the agent's `job` tool; the `job` event of docs/events.md): the chat's window
-- bar names the running ones, `:TotemJobs` lists every job in a scratch buffer (`x` stops the
-- one under the cursor) and `:TotemJobStop ID` stops one, with `totem/jobStop`
-- (docs/protocol.md).
--
-- The list is this Neovim's, not one session's: a job outlives its turn, and a session the chat
-- left (:TotemNew, :TotemSessions) may still have one running that only this list can stop.
local client = require('totem.client')

local M = {}

--- Each job: { client_id, sessionId, jobId, command, state, exitCode, stopping }, in the order
--- they started. state: running | exited | stopped | killed; exitCode: nil while it runs,
--- negative for the signal that ended it.
M.jobs = {}

local LIST_NAME = 'totem://jobs'
local list_buf = nil
local list_order = {} -- the job of each row of the list, after its header

local function find(client_id, session, id)
  for _, job in ipairs(M.jobs) do
    if job.client_id == client_id and job.sessionId == session and job.jobId == id then
      return job
    end
  end
end

local function exit_code(value)
  return type(value) == 'number' and value or nil
end

--- A job whose server is gone ended with it (the server kills every job when it shuts down,
--- and its last events may not have reached us).
local function prune()
  for _, job in ipairs(M.jobs) do
    if job.state == 'running' then
      local c = vim.lsp.get_client_by_id(job.client_id)
      if not c or c:is_stopped() then
        job.state, job.stopping = 'killed', false
      end
    end
  end
end

function M.running()
  prune()
  return vim.tbl_filter(function(job)
    return job.state == 'running'
  end, M.jobs)
end

--- What a job in the sandbox without network is told by (the `job` event's `offline`): a
--- server it runs answers the session's commands, not the user's browser; unless the user had
--- its ports forwarded to this machine's loopback (`forwarded`, `forwardTaken`).
function M.network(job)
  local said = job.offline and '  · no network (sandbox)' or ''
  if job.forwarded and #job.forwarded > 0 then
    said = said .. ' · ports forwarded to 127.0.0.1: ' .. table.concat(job.forwarded, ', ')
  end
  if job.forwardTaken and #job.forwardTaken > 0 then
    said = said .. ' · taken on this machine, not forwarded: ' .. table.concat(job.forwardTaken, ', ')
  end
  return said
end

--- "job1 `sleep 30` · stopped · exit code -15" (one line).
function M.line(job)
  local state = job.stopping and 'stopping…' or job.state
  local exit = job.exitCode and (' · exit code %d'):format(job.exitCode) or ''
  return ('%s `%s` · %s%s%s'):format(job.jobId, job.command, state, exit, M.network(job))
end

--- What the chat's window bar adds: the running jobs (the one's command, or the ids of
--- several: the bar is narrow), or nothing.
function M.winbar()
  local running = M.running()
  if #running == 0 then
    return ''
  elseif #running == 1 then
    local job = running[1]
    local command = job.command
    if vim.fn.strcharlen(command) > 24 then
      command = vim.trim(vim.fn.strcharpart(command, 0, 23)) .. '…'
    end
    return ('  ·  %s %s: %s'):format(job.jobId, job.stopping and 'stopping…' or 'running', command)
  end
  local ids = vim.tbl_map(function(job)
    return job.jobId
  end, running)
  return ('  ·  %d jobs running: %s'):format(#running, table.concat(ids, ' '))
end

local function redraw()
  require('totem.chat').update_winbar()
  M.draw()
end

--- A `job` event (totem/event), of any session of the server `client_id`.
function M.on_event(e, client_id)
  if type(e.jobId) ~= 'string' then
    return
  end
  local job = find(client_id, e.sessionId, e.jobId)
  if not job then
    job = { client_id = client_id, sessionId = e.sessionId, jobId = e.jobId }
    table.insert(M.jobs, job)
  end
  job.command = tostring(e.command or '')
  job.offline = e.offline == true
  job.forwarded = type(e.forwarded) == 'table' and e.forwarded or {}
  job.forwardTaken = type(e.forwardTaken) == 'table' and e.forwardTaken or {}
  job.state = e.state
  job.exitCode = exit_code(e.exitCode)
  if e.state ~= 'running' then
    job.stopping = false
  end
  redraw()
end

--- Stops a job with totem/jobStop; the answer comes once its whole process group has ended.
function M.stop(job)
  prune()
  if job.state ~= 'running' then
    client.notify(('%s already ended (%s)'):format(job.jobId, job.state))
    return
  end
  local c = vim.lsp.get_client_by_id(job.client_id)
  job.stopping = true
  redraw()
  client.request(c, 'totem/jobStop', { sessionId = job.sessionId, jobId = job.jobId }, function(err, result)
    job.stopping = false
    if err then
      client.notify(('could not stop %s: %s'):format(job.jobId, err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif type(result) == 'table' then
      job.state = result.state or job.state
      job.exitCode = exit_code(result.exitCode)
      client.notify(M.line(job))
    end
    redraw()
  end)
end

--- The job called `id`: the chat's session's first, else the only running one of that name.
function M.named(id)
  local chat = require('totem.chat').state
  local mine = find(chat.client_id, chat.session, id)
  if mine then
    return mine
  end
  local running = vim.tbl_filter(function(job)
    return job.jobId == id
  end, M.running())
  if #running == 1 then
    return running[1]
  end
  return nil, #running > 1 and ('%d sessions have a running %s: stop it from :TotemJobs'):format(#running, id)
    or ('no job %s (:TotemJobs lists them)'):format(id)
end

--- :TotemJobStop [ID]: without ID, the job under the cursor in the list, else the only running one.
function M.stop_command(opts)
  local id = opts and opts.args or ''
  local job, why
  if id ~= '' then
    job, why = M.named(id)
  elseif list_buf and vim.api.nvim_get_current_buf() == list_buf then
    job = M.at_cursor()
    why = 'no job on this line'
  else
    local running = M.running()
    job = #running == 1 and running[1] or nil
    why = #running == 0 and 'no job is running' or 'several jobs run: :TotemJobStop ID (:TotemJobs lists them)'
  end
  if not job then
    client.notify(why, vim.log.levels.WARN)
    return
  end
  M.stop(job)
end

--- Completion of :TotemJobStop: the ids of the running jobs.
function M.complete(lead)
  local ids = {}
  for _, job in ipairs(M.running()) do
    if vim.startswith(job.jobId, lead) and not vim.tbl_contains(ids, job.jobId) then
      table.insert(ids, job.jobId)
    end
  end
  return ids
end

-- The list buffer -------------------------------------------------------------------------------

local HEADER = { 'Totem jobs  (x: stop the job under the cursor, q: close)', '' }

--- The list's lines: one a job, running ones first; the session shown when there are several.
function M.lines()
  prune()
  local sessions = {}
  for _, job in ipairs(M.jobs) do
    sessions[job.sessionId] = true
  end
  local several = vim.tbl_count(sessions) > 1
  local rows, order = {}, {}
  for _, running in ipairs({ true, false }) do
    for _, job in ipairs(M.jobs) do
      if (job.state == 'running') == running then
        local state = job.stopping and 'stopping…' or job.state
        local exit = job.exitCode and (' (exit code %d)'):format(job.exitCode) or ''
        local session = several and ('  [%s]'):format(job.sessionId) or ''
        table.insert(rows, ('%-6s %-24s %s%s%s'):format(job.jobId, state .. exit, job.command, M.network(job), session))
        table.insert(order, job)
      end
    end
  end
  if #rows == 0 then
    rows = { 'No background jobs.' }
  end
  return vim.list_extend(vim.deepcopy(HEADER), rows), order
end

--- Redraws the list buffer when it exists (each job event, each stop).
function M.draw()
  if not (list_buf and vim.api.nvim_buf_is_valid(list_buf)) then
    return
  end
  local lines, order = M.lines()
  vim.bo[list_buf].modifiable = true
  vim.api.nvim_buf_set_lines(list_buf, 0, -1, false, lines)
  vim.bo[list_buf].modifiable = false
  list_order = order
end

--- The job on the cursor's line of the list.
function M.at_cursor()
  local row = vim.api.nvim_win_get_cursor(0)[1] - #HEADER
  return list_order[row]
end

--- :TotemJobs: the list in a split below (focused); `x` stops a job, `q` closes.
function M.open()
  if not (list_buf and vim.api.nvim_buf_is_valid(list_buf)) then
    list_buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(list_buf, LIST_NAME)
    vim.bo[list_buf].buftype = 'nofile'
    vim.bo[list_buf].bufhidden = 'hide'
    vim.bo[list_buf].swapfile = false
    vim.bo[list_buf].filetype = 'totemjobs'
    local map = function(lhs, fn, desc)
      vim.keymap.set('n', lhs, fn, { buffer = list_buf, nowait = true, desc = desc })
    end
    map('x', function()
      local job = M.at_cursor()
      if job then
        M.stop(job)
      end
    end, 'Totem: stop the job under the cursor')
    map('q', function()
      vim.cmd.close()
    end, 'Totem: close the job list')
  end
  M.draw()
  local win = vim.fn.bufwinid(list_buf)
  if win == -1 then
    win = vim.api.nvim_open_win(list_buf, true, { split = 'below', win = -1, height = math.min(12, #M.jobs + #HEADER + 1) })
    vim.wo[win].number = false
    vim.wo[win].relativenumber = false
    vim.wo[win].wrap = false
  else
    vim.api.nvim_set_current_win(win)
  end
  -- On the first job's line.
  vim.api.nvim_win_set_cursor(win, { math.min(#HEADER + 1, vim.api.nvim_buf_line_count(list_buf)), 0 })
  return win
end

function M.buf()
  return list_buf
end

return M
