-- :TotemTools: the tools the current chat's session offers its model at its next turn, and why
-- fewer than all (totem/tools, docs/protocol.md), in a scratch buffer below (`q` closes). A model
-- with a small window gets the core tools only: this is where the user sees that `job` is not
-- among them, before the model's call to it fails.
local client = require('totem.client')
local chat = require('totem.chat')

local M = {}

local BUF_NAME = 'totem://tools'
local buf = nil

--- The lines shown for a totem/tools result.
function M.lines(listed)
  local window = type(listed.contextWindow) == 'number' and (', window %d tokens'):format(listed.contextWindow) or ''
  local lines = { ('Tools of %s (%s, %s mode%s)'):format(listed.sessionId, listed.model, listed.mode, window) }
  if type(listed.narrowed) == 'string' then
    table.insert(lines, 'Narrowed: ' .. listed.narrowed)
  end
  if type(listed.leftOut) == 'table' and #listed.leftOut > 0 then
    table.insert(lines, 'Left out: ' .. table.concat(listed.leftOut, ', '))
  end
  if listed.scripts == true then
    table.insert(lines, 'Code mode: the model writes its calls as scripts')
  end
  table.insert(lines, '')
  for _, tool in ipairs(listed.tools or {}) do
    local refused = type(tool.refused) == 'string' and (' (' .. tool.refused .. ')') or ''
    table.insert(lines, ('%-10s %s%s'):format(tool.name, tool.description or '', refused))
  end
  return lines
end

local function show(lines)
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, BUF_NAME)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = 'totemtools'
    vim.keymap.set('n', 'q', function()
      vim.cmd.close()
    end, { buffer = buf, nowait = true, desc = 'Totem: close the tool list' })
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    win = vim.api.nvim_open_win(buf, true, { split = 'below', win = -1, height = math.min(20, #lines) })
    vim.wo[win].number = false
    vim.wo[win].wrap = false
  else
    vim.api.nvim_set_current_win(win)
  end
end

function M.open()
  local state = chat.state
  local c = state.client_id and vim.lsp.get_client_by_id(state.client_id)
  if not c or not state.session then
    return client.notify('no session in the chat yet', vim.log.levels.WARN)
  end
  client.request(c, 'totem/tools', { sessionId = state.session }, function(err, listed)
    if err then
      return client.notify('tools: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    show(M.lines(listed))
  end)
end

function M.buf()
  return buf
end

return M
