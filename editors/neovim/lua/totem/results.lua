-- What a tool call's end shows under its `▶` line in the chat: the result line (a command that
-- exited non-zero or was killed marked failed), the command a `bash` call ran when its title is
-- the model's description, the user's feedback when they rejected the call with some, and what
-- a command printed (bash, job), capped to its first and last lines. The chat's foldexpr folds each call with what it shows
-- (closed when it worked, open when it did not) and a command's output inside it.
local M = {}

M.OUTPUT = '    │ ' -- every line of a command's output starts with this
M.FEEDBACK = '    Your feedback: '
M.COMMAND = '    $ ' -- the command a bash call ran, under its result
M.MAX_OUTPUT = 40 -- lines of output shown: the first and the last half of a longer one

local STATUS_MARK = { ok = '✓', error = '✗', denied = '⊘', interrupted = '…' }
local RESULT_PREFIXES = { '    ✓ ', '    ✗ ', '    ⊘ ', '    … ', '    · ' }
local NOT_OK = { '    ✗', '    ⊘', '    …' }
local SHOWS_OUTPUT = { bash = true, job = true }
local REJECTED = '^The user rejected this action%. Their feedback: (.*)$'

local function one_line(text)
  text = tostring(text or ''):gsub('\r?\n.*', '')
  return text
end

local function text_or_nil(value)
  return type(value) == 'string' and value ~= '' and value or nil
end

--- The user's feedback on a rejected call: the event's (or stored part's) `feedback`, else read
--- from the refusal the model got (sessions stored before the server sent it).
local function feedback_of(e)
  local said = text_or_nil(e.feedback)
  if said then
    return said
  end
  local output = text_or_nil(e.output)
  return output and output:match(REJECTED) or nil
end

--- The output lines shown: all of a short output, the first and last of a long one.
local function capped(output)
  local lines = vim.split((output:gsub('\n$', '')), '\n', { plain = true })
  if #lines > M.MAX_OUTPUT then
    local half = M.MAX_OUTPUT / 2
    local shown = vim.list_slice(lines, 1, half)
    table.insert(shown, ('… %d more lines …'):format(#lines - M.MAX_OUTPUT))
    vim.list_extend(shown, vim.list_slice(lines, #lines - half + 1, #lines))
    lines = shown
  end
  return vim.tbl_map(function(line)
    return M.OUTPUT .. line
  end, lines)
end

local UNFINISHED = { pending = true, running = true }

--- The result line: the status mark, the status unless ok, the summary. A call stored without a
--- result (`pending` or `running` in a session no turn runs: the server stopped during it) was
--- interrupted, and is shown so; an interrupted call's summary is left out when it only repeats
--- that.
local function result_line(status, summary, exit_code)
  status = UNFINISHED[status] and 'interrupted' or status
  summary = one_line(summary)
  if status == 'ok' and exit_code ~= nil and exit_code ~= 0 then
    return ('    %s failed: %s'):format(STATUS_MARK.error, summary)
  elseif status == 'ok' then
    return ('    %s %s'):format(STATUS_MARK.ok, summary)
  elseif status == 'interrupted' and (summary == '' or summary == 'interrupted') then
    return '    ' .. STATUS_MARK.interrupted .. ' interrupted'
  end
  return ('    %s %s: %s'):format(STATUS_MARK[status] or '·', status or '?', summary)
end

--- A bash call's exit code: the event's (or stored part's) `exitCode`, else read from the
--- summary (sessions stored before the server sent it).
local function exit_code_of(e)
  if e.tool ~= 'bash' then
    return nil
  end
  if type(e.exitCode) == 'number' then
    return e.exitCode
  end
  return tonumber(tostring(e.summary or ''):match('^exit (%-?%d+)$'))
end

--- The command line shown under a bash call's result: its first line, when the call's line
--- shows the model's description instead (`nil` otherwise).
function M.command_line(tool, input, title)
  local command = tool == 'bash' and type(input) == 'table' and input.command
  if type(command) ~= 'string' or vim.trim(command) == '' or vim.startswith(title or '', '$ ' .. command) then
    return nil
  end
  local lines = vim.split(vim.trim(command), '\n', { plain = true })
  return M.COMMAND .. lines[1] .. (#lines > 1 and (' … (%d more lines)'):format(#lines - 1) or '')
end

--- The lines under a call's line for its end `e` ({tool, status, summary, output?, feedback?,
--- exitCode?, command?}: a toolEnd event, or a stored tool part's data and status; `command`:
--- M.command_line's).
function M.lines(e)
  local lines = { result_line(e.status, e.summary, exit_code_of(e)) }
  if e.command then
    table.insert(lines, e.command)
  end
  local feedback = feedback_of(e)
  if feedback then
    for i, line in ipairs(vim.split(feedback, '\n', { plain = true })) do
      table.insert(lines, (i == 1 and M.FEEDBACK or '    ') .. line)
    end
    return lines
  end
  local output = text_or_nil(e.output)
  if output and SHOWS_OUTPUT[e.tool] and (e.status == 'ok' or e.status == 'error') then
    vim.list_extend(lines, capped(output))
  end
  return lines
end

--- Whether `line` is a call's result line.
function M.is_result(line)
  for _, prefix in ipairs(RESULT_PREFIXES) do
    if line:sub(1, #prefix) == prefix then
      return true
    end
  end
  return false
end

--- Whether the result line `line` says the call did not work, so its fold stays open: an error
--- (a failed command's `✗ failed: exit 3` too), a denial, an interruption, or, drawn by an older
--- chat, a command that exited non-zero (`✓ exit 3`).
function M.failed(line)
  for _, prefix in ipairs(NOT_OK) do
    if line:sub(1, #prefix) == prefix then
      return true
    end
  end
  local code = line:match('^    ✓ exit (%-?%d+)')
  return code ~= nil and tonumber(code) ~= 0
end

function M.is_command(line)
  return line:sub(1, #M.COMMAND) == M.COMMAND
end

function M.is_output(line)
  return line:sub(1, #M.OUTPUT) == M.OUTPUT
end

return M
