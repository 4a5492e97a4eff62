-- :checkhealth totem
local M = {}

function M.check()
  local health = vim.health
  health.start('totem')

  if vim.fn.has('nvim-0.11') == 1 and vim.lsp.config and vim.lsp.enable then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.11 or newer is needed (vim.lsp.config, vim.lsp.enable)')
  end

  local totem = require('totem')
  local options = totem.options
  if not options then
    health.warn('require("totem").setup() was not called')
    options = totem.defaults
  else
    health.ok('setup() done')
  end

  local cmd = options.cmd or {}
  local exe = type(cmd) == 'table' and cmd[1] or nil
  if exe and vim.fn.executable(exe) == 1 then
    health.ok(('server command: %s (%s)'):format(table.concat(cmd, ' '), vim.fn.exepath(exe)))
  else
    health.error(('server command not executable: %s'):format(vim.inspect(cmd)), {
      'Install Totem (pip install totem-lsp) or set cmd in setup(), e.g. { "/path/to/.venv/bin/totem", "lsp" }',
    })
  end

  health.info('auto_save: ' .. tostring(options.auto_save))
  health.info('root markers: ' .. table.concat(options.root_markers or {}, ', '))

  local root = vim.fs.root(0, options.root_markers or {})
  if root then
    health.ok('current buffer is in project ' .. root)
  else
    health.info('current buffer is in no project (no root marker above it): Totem does not start for it')
  end

  local clients = vim.lsp.get_clients({ name = 'totem' })
  if #clients == 0 then
    health.info('no Totem server running')
  end
  local wanted = require('totem.client').protocol_version
  for _, c in ipairs(clients) do
    local version = vim.tbl_get(c.server_capabilities or {}, 'experimental', 'totem', 'protocolVersion')
    local where = ('client %d (%s)'):format(c.id, c.root_dir or '?')
    if version == nil then
      health.warn(where .. ': the server announced no protocolVersion')
    elseif version > wanted then
      health.warn(('%s: protocol %d, newer than the plugin (%d)'):format(where, version, wanted))
    else
      health.ok(('%s: protocol %d'):format(where, version))
    end
  end
end

return M
