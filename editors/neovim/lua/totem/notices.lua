-- Notices for a user who is elsewhere (seed 001, "the notices of the browser"): when a turn ends
-- or a question waits and the user is not in that chat's window (or Neovim's terminal lost the
-- focus), a vim.notify says so. `notify = false` in setup turns them off.
local M = {}

-- Neovim's terminal has the focus unless it said otherwise (terminals that report focus).
local focused = true
local group = vim.api.nvim_create_augroup('totem.notices', { clear = true })
vim.api.nvim_create_autocmd('FocusLost', {
  group = group,
  callback = function()
    focused = false
  end,
})
vim.api.nvim_create_autocmd('FocusGained', {
  group = group,
  callback = function()
    focused = true
  end,
})

local ENDED = {
  finished = { 'finished', vim.log.levels.INFO },
  step_limit = { 'stopped at the step limit', vim.log.levels.WARN },
  guard = { 'was stopped by a guard', vim.log.levels.WARN },
  error = { 'failed', vim.log.levels.ERROR },
  -- aborted: the user stopped it, so they are there.
}

--- Whether the user is away from `chat` (a chat of chat.lua): notices on, and its buffer not in
--- the current window or Neovim without the focus.
function M.away_from(chat)
  local options = require('totem.client').options
  if options and options.notify == false then
    return false
  end
  return not focused or not chat or vim.api.nvim_get_current_buf() ~= chat.buf
end

local function name_of(chat)
  local buf = chat and chat.buf
  return buf and vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_name(buf) or 'Totem chat'
end

--- A turn of `chat` ended (its `turnEnd` event, not a sub-agent's).
function M.turn_end(chat, e)
  local ended = ENDED[e.stopReason]
  if ended and M.away_from(chat) then
    vim.notify(('Totem %s (%s)'):format(ended[1], name_of(chat)), ended[2])
  end
end

--- A question waits for the user in the chat of `session`: `what` says which.
function M.ask(session, what)
  local chat = require('totem.chat').chat_of(session)
  if M.away_from(chat) then
    vim.notify(('Totem %s (%s)'):format(what, name_of(chat)), vim.log.levels.WARN)
  end
end

return M
