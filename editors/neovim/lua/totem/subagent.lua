-- A sub-agent's thread in the chat buffer: the events that carry `parentCallId` (a `task`
-- call's, docs/events.md guarantee 11) become a block of lines right under that call's tool
-- line, above its result line and so above the answer. Every line of the block starts with
-- PREFIX, which the chat's foldexpr folds (closed by default), and none of it is ever written
-- where the conversation's own answer streams. Several `task` calls run at the same time, so
-- their events interleave: each block grows under its own tool line. Each chat buffer (one a
-- session) keeps its own blocks.
local M = {}

M.PREFIX = '  │ '

local ns = vim.api.nvim_create_namespace('totem.subagent') -- a nested call's tool line
local STATUS_MARK = { ok = '✓', error = '✗', denied = '⊘', interrupted = '…' }

-- chat buffer -> parentCallId -> { count = lines in the block, header, part = {kind, id}, step =
-- first row of the running step's output (relative), calls = nested callId -> extmark }
M.blocks = {}

local function blocks_of(buf)
  M.blocks[buf] = M.blocks[buf] or {}
  return M.blocks[buf]
end

--- Forgets the blocks of the chat buffer `buf` (`clear`: and its marks: the buffer is emptied).
function M.reset(buf, clear)
  M.blocks[buf] = nil
  if clear and vim.api.nvim_buf_is_valid(buf) then
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  end
end

local function one_line(text)
  text = tostring(text or ''):gsub('\r?\n.*', '')
  return text
end

--- The block of `parent`, created under the tool line at `row` (its header is its first line).
local function block(buf, parent, agent, row)
  local b = blocks_of(buf)[parent]
  if not b then
    b = { count = 1, header = M.PREFIX .. '[' .. (agent or 'agent') .. ']', calls = {} }
    vim.api.nvim_buf_set_lines(buf, row + 1, row + 1, false, { b.header })
    blocks_of(buf)[parent] = b
  end
  return b
end

--- Appends whole lines (PREFIX added) at the end of the block.
local function add(buf, b, row, lines)
  local at = row + b.count + 1
  local prefixed = vim.tbl_map(function(l)
    return M.PREFIX .. l
  end, lines)
  vim.api.nvim_buf_set_lines(buf, at, at, false, prefixed)
  b.count = b.count + #lines
  b.part = nil
  return at
end

local function stream(buf, b, row, kind, part_id, text)
  if b.step == nil then
    b.step = b.count -- a stepDiscarded cuts the block back to here
  end
  local lead = kind == 'reasoning' and '> ' or ''
  if not b.part or b.part.id ~= part_id then
    add(buf, b, row, { lead })
    b.part = { kind = kind, id = part_id }
  end
  local last = row + b.count
  local line = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1]
  local pieces = vim.split(text, '\n', { plain = true })
  for i = 2, #pieces do
    pieces[i] = M.PREFIX .. lead .. pieces[i]
  end
  vim.api.nvim_buf_set_text(buf, last, #line, last, #line, pieces)
  b.count = b.count + #pieces - 1
end

local render = {}

function render.textDelta(buf, b, row, e)
  stream(buf, b, row, 'text', e.partId, e.text or '')
end

function render.reasoningDelta(buf, b, row, e)
  stream(buf, b, row, 'reasoning', e.partId, e.text or '')
end

function render.stepEnd(buf, b, row, e)
  b.step, b.part = nil, nil
  if e.model then
    -- The header names the model the agent ran on (it may not be the conversation's).
    b.header = M.PREFIX .. '[' .. (e.agent or 'agent') .. ' on ' .. e.model .. ']'
    vim.api.nvim_buf_set_lines(buf, row + 1, row + 2, false, { b.header })
  end
end

function render.stepDiscarded(buf, b, row)
  if b.step then
    vim.api.nvim_buf_set_lines(buf, row + b.step + 1, row + b.count + 1, false, {})
    b.count = b.step
  end
  b.step, b.part = nil, nil
end

function render.toolStart(buf, b, row, e)
  local at = add(buf, b, row, { '▶ ' .. one_line(e.title ~= '' and e.title or e.tool) })
  b.calls[e.callId] = vim.api.nvim_buf_set_extmark(buf, ns, at, 0, { right_gravity = false })
end

function render.toolEnd(buf, b, row, e)
  local line = ('    %s %s%s'):format(
    STATUS_MARK[e.status] or '·',
    e.status == 'ok' and '' or ((e.status or '?') .. ': '),
    one_line(e.summary)
  )
  local mark = b.calls[e.callId]
  local at = mark and vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {})[1]
  if at then
    vim.api.nvim_buf_set_lines(buf, at + 1, at + 1, false, { M.PREFIX .. line })
    b.count = b.count + 1
    vim.api.nvim_buf_del_extmark(buf, ns, mark)
    b.calls[e.callId] = nil
  else
    add(buf, b, row, { line })
  end
end

function render.todo(buf, b, row, e)
  local lines = { '**Todo**' }
  for _, t in ipairs(e.todos or {}) do
    table.insert(lines, '- ' .. one_line(t.content) .. ' (' .. tostring(t.status) .. ')')
  end
  add(buf, b, row, lines)
end

function render.notice(buf, b, row, e)
  add(buf, b, row, { ('**%s:** %s'):format(e.level == 'error' and 'Error' or 'Note', one_line(e.message)) })
end

function render.error(buf, b, row, e)
  add(buf, b, row, { ('**Error** (%s): %s'):format(e.errorClass or '?', one_line(e.message)) })
end

--- Shows the nested event `e` in the block under the tool line at `row` (0-based) of its
--- `task` call. Kinds without a line (context, permission) change nothing.
function M.render(buf, e, row)
  local fn = render[e.kind]
  if not fn then
    return
  end
  fn(buf, block(buf, e.parentCallId, e.agent, row), row, e)
end

--- The lines the block of `call_id` takes in `buf` (0 when it has none); the call's result goes
--- after them.
function M.size(buf, call_id)
  local b = blocks_of(buf)[call_id]
  return b and b.count or 0
end

--- The task call ended: its block is complete.
function M.finish(buf, call_id)
  blocks_of(buf)[call_id] = nil
end

--- A stored thread (the `task` call part's `data.thread`) as the events it was made of.
function M.thread_events(thread, parent)
  local events = {}
  local function push(e)
    e.parentCallId = parent
    e.agent = thread.agent
    table.insert(events, e)
  end
  for _, message in ipairs(thread.messages or {}) do
    if message.role ~= 'user' then
      for _, part in ipairs(message.parts or {}) do
        local data = part.data or {}
        if not part.discarded then
          if part.type == 'text' or part.type == 'reasoning' then
            push({ kind = part.type == 'text' and 'textDelta' or 'reasoningDelta', partId = part.id, text = data.text or '' })
          elseif part.type == 'step' then
            push({ kind = 'stepEnd', model = data.model or thread.model })
          elseif part.type == 'tool' then
            push({ kind = 'toolStart', callId = data.callId, title = data.title or data.tool, tool = data.tool })
            push({ kind = 'toolEnd', callId = data.callId, status = part.status, summary = data.summary })
          end
        end
      end
    end
  end
  return events
end

return M
