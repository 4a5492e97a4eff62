-- Totem for Neovim: a coding agent behind a language server (`totem lsp`).
-- The whole wire contract is docs/protocol.md of the Totem repository.
local M = {}

M.defaults = {
  -- The server command; its own working directory is the project root.
  cmd = { 'totem', 'lsp' },
  -- "provider/model" for new sessions (initializationOptions.model); nil: the config's model.
  model = nil,
  -- Editor settings layer: a table with the keys of Totem's TOML config (sent as
  -- initializationOptions.config and with workspace/didChangeConfiguration).
  settings = nil,
  -- The step limit of a turn (the config's max_steps, over `settings.max_steps`): 20 and 60 are
  -- the presets of :TotemSteps, 0 no cap (1 to 9 are raised to 10); nil: the config's.
  max_steps = nil,
  -- A vim.notify when a turn ends or a question waits while you are not in that chat's window.
  notify = true,
  -- Write the buffers an applied agent edit (or undo/redo) changed, so tests and shells see it.
  auto_save = true,
  -- Global mappings; false for none, or set single keys to false.
  keymaps = {
    ask = '<leader>ta', -- normal: ask (prompt); visual: ask with the selection as context
    chat = '<leader>tc', -- open or close the chat window
    abort = '<leader>tx', -- stop the running turn
  },
  chat = {
    position = 'right', -- 'right', 'left', 'top', 'bottom'
    size = 0.4, -- fraction of the editor (or columns/lines when > 1)
  },
  -- Root markers: the nearest directory holding one of these is a project (workspace folder).
  root_markers = { '.git', '.totem', 'package.json', 'pyproject.toml' },
}

M.options = nil

---@param opts table|nil
function M.setup(opts)
  opts = opts or {}
  local options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  if opts.keymaps == false then
    options.keymaps = false
  end
  if opts.root_markers then
    options.root_markers = opts.root_markers
  end
  if type(options.cmd) == 'string' then
    options.cmd = { options.cmd, 'lsp' }
  end
  M.options = options
  require('totem.client').setup(options)
  require('totem.commands').setup(options)
end

return M
