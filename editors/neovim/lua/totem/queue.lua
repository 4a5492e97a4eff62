-- Messages sent while the chat's turn runs: kept in order on the chat (`chat.queued`, this
-- Neovim's alone: the server runs one turn a session), drawn under the chat's last line as
-- queued, each sent when the turn before it ends. :TotemQueue edits or removes one until it is
-- sent; a stop (:TotemAbort) with messages queued asks whether to drop them.
local M = {}

local ns = vim.api.nvim_create_namespace('totem.queue')
vim.api.nvim_set_hl(0, 'TotemQueued', { link = 'Comment', default = true })
vim.api.nvim_set_hl(0, 'TotemQueuedTitle', { link = 'WarningMsg', default = true })

M.TITLE = 'Queued for after this turn (:TotemQueue):'

local function first_line(text)
  local line = vim.split(text, '\n', { plain = true })[1]
  return line .. (text:find('\n') and ' …' or '')
end

--- Draws `chat`'s queue under the last line of its buffer `buf` (virtual lines: the messages
--- are not the conversation's until they are sent).
function M.draw(chat, buf)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local queued = chat.queued or {}
  if #queued == 0 then
    return
  end
  local lines = { { { '', 'TotemQueued' } }, { { M.TITLE, 'TotemQueuedTitle' } } }
  for i, message in ipairs(queued) do
    table.insert(lines, { { ('  %d. %s'):format(i, first_line(message.text)), 'TotemQueued' } })
  end
  vim.api.nvim_buf_set_extmark(buf, ns, vim.api.nvim_buf_line_count(buf) - 1, 0, { virt_lines = lines })
end

local function redraw(chat)
  if chat.buf and vim.api.nvim_buf_is_valid(chat.buf) then
    M.draw(chat, chat.buf)
  end
end

--- Whether a message sent from `chat` now waits: a turn runs there (or its request is open).
function M.waits(chat)
  return chat.busy or chat.pending or chat.request_id ~= nil
end

--- Puts `message` ({text, context, bufnr}) at the end of `chat`'s queue.
function M.add(chat, message)
  chat.queued = chat.queued or {}
  table.insert(chat.queued, message)
  redraw(chat)
  require('totem.client').notify(('queued: sent when the turn ends (%d waiting; :TotemQueue edits)'):format(#chat.queued))
end

--- The turn of `chat` is over: its first queued message, taken off the queue, goes to
--- `send(message)` (nil when none waits or another turn runs).
function M.next(chat, send)
  local queued = chat.queued or {}
  if #queued == 0 or chat.busy or chat.pending or chat.request_id then
    return
  end
  local message = table.remove(queued, 1)
  redraw(chat)
  send(message)
end

--- The stop of `chat`'s turn: with messages queued, asks whether to drop them (kept, they are
--- sent when the stopped turn ends). Esc keeps them.
function M.ask_on_stop(chat)
  local count = #(chat.queued or {})
  if count == 0 then
    return
  end
  local what = count == 1 and '1 queued message' or (count .. ' queued messages')
  local choice = vim.fn.confirm(('Stopping the turn. Drop the %s?'):format(what), '&Drop\n&Keep (send after the stop)', 2)
  if choice == 1 then
    chat.queued = {}
    redraw(chat)
  end
end

--- :TotemQueue: picks one of `chat`'s queued messages, then edits it (`open_input(text, done)`:
--- the input prefilled, `done(new_text)` on <C-s>) or removes it.
function M.pick(chat, open_input)
  local queued = chat.queued or {}
  if #queued == 0 then
    return require('totem.client').notify('no message is queued in this chat')
  end
  vim.ui.select(queued, {
    prompt = 'Queued message',
    format_item = function(message)
      return first_line(message.text)
    end,
  }, function(message)
    if not message then
      return
    end
    vim.ui.select({ 'Edit', 'Remove' }, { prompt = first_line(message.text) }, function(action)
      if action == 'Remove' then
        M.remove(chat, message)
      elseif action == 'Edit' then
        open_input(message.text, function(text)
          message.text = text
          redraw(chat)
        end)
      end
    end)
  end)
end

--- Takes `message` off `chat`'s queue (when it is still there).
function M.remove(chat, message)
  for i, queued in ipairs(chat.queued or {}) do
    if queued == message then
      table.remove(chat.queued, i)
      break
    end
  end
  redraw(chat)
end

return M
