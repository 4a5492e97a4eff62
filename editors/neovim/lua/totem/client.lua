-- The LSP side: the `totem` config for vim.lsp.config/enable, the handlers of the server's
-- requests and notifications, and small request helpers for the other modules.
local M = {}

M.name = 'totem'
M.protocol_version = 1 -- the docs/protocol.md version this plugin was written for
M.options = nil

local function notify(msg, level)
  vim.notify('Totem: ' .. msg, level or vim.log.levels.INFO)
end
M.notify = notify

--- The buffers a WorkspaceEdit touches.
local function touched_buffers(edit)
  local bufs = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      table.insert(bufs, { bufnr = vim.uri_to_bufnr(change.textDocument.uri), version = change.textDocument.version })
    end
  end
  for uri in pairs(edit.changes or {}) do
    table.insert(bufs, { bufnr = vim.uri_to_bufnr(uri) })
  end
  return bufs
end

--- Writes a changed file buffer (autocmds run, so the server gets didSave).
function M.save(bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' or not vim.bo[bufnr].modified then
    return
  end
  local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd('silent lockmarks update')
  end)
  if not ok then
    notify('could not write ' .. vim.api.nvim_buf_get_name(bufnr) .. ': ' .. tostring(err), vim.log.levels.WARN)
  end
end

--- workspace/applyEdit: refuse stale versions, apply, send didChange at once (the protocol wants
--- it before the answer), then write the changed buffers when auto_save is on.
function M.apply_edit(_, params, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client or type(params) ~= 'table' or type(params.edit) ~= 'table' then
    return { applied = false, failureReason = 'malformed workspace/applyEdit' }
  end
  local bufs = touched_buffers(params.edit)
  for _, b in ipairs(bufs) do
    local version = b.version
    if type(version) == 'number' and vim.api.nvim_buf_is_loaded(b.bufnr) then
      local current = vim.lsp.util.buf_versions[b.bufnr]
      if current ~= version then
        return {
          applied = false,
          failureReason = ('the buffer changed (version %d, edit for %d)'):format(current, version),
        }
      end
    end
  end
  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, params.edit, client.offset_encoding)
  if not ok then
    return { applied = false, failureReason = tostring(err) }
  end
  -- didChange now, not after the debounce: the server records the file right after our answer.
  pcall(function()
    require('vim.lsp._changetracking').flush(client)
  end)
  if M.options and M.options.auto_save then
    for _, b in ipairs(bufs) do
      M.save(b.bufnr)
    end
  end
  return { applied = true }
end

local function on_init(client, result)
  local totem = vim.tbl_get(result or {}, 'capabilities', 'experimental', 'totem') or {}
  local version = totem.protocolVersion
  if type(version) ~= 'number' then
    notify('the server announced no protocolVersion; is it `totem lsp`?', vim.log.levels.WARN)
  elseif version > M.protocol_version then
    notify(
      ('server protocol version %d is newer than this plugin (%d); update the plugin'):format(
        version,
        M.protocol_version
      ),
      vim.log.levels.WARN
    )
  end
  require('totem.restart').on_init(client)
end

--- The editor's config layer: `settings` with `max_steps` when set (nil when there is nothing).
function M.editor_config(options)
  if options.max_steps == nil then
    return options.settings
  end
  return vim.tbl_extend('force', options.settings or {}, { max_steps = options.max_steps })
end

--- The editor's settings (`max_steps`, `settings`, `model`) sent again to every running server
--- (workspace/didChangeConfiguration), and kept for a server started later.
function M.settings_changed(options)
  local config = M.editor_config(options)
  -- Replaced, not merged (vim.lsp.config() would keep a max_steps set to nil), keeping the rest.
  local lsp = vim.lsp.config[M.name]
  lsp.init_options = M.lsp_config(options).init_options
  vim.lsp.config[M.name] = lsp
  for _, c in ipairs(vim.lsp.get_clients({ name = M.name })) do
    c:notify('workspace/didChangeConfiguration', {
      settings = { totem = { config = config or vim.empty_dict(), model = options.model } },
    })
  end
end

--- The vim.lsp.Config for `totem`.
function M.lsp_config(options)
  local capabilities = vim.tbl_deep_extend('force', vim.lsp.protocol.make_client_capabilities(), {
    workspace = {
      applyEdit = true,
      workspaceEdit = { documentChanges = true, resourceOperations = { 'create', 'rename', 'delete' } },
    },
    window = { workDoneProgress = true },
    -- subAgents: a sub-agent's events (parentCallId) are shown nested and folded (chat.lua).
    experimental = { totem = { permission = true, question = true, trust = true, events = true, subAgents = true } },
  })
  local markers = options.root_markers
  return {
    cmd = options.cmd,
    root_markers = markers,
    root_dir = function(bufnr, on_dir)
      local root = vim.fs.root(bufnr, markers)
      if root then
        on_dir(root)
      end
    end,
    capabilities = capabilities,
    init_options = (options.model or M.editor_config(options))
        and { model = options.model, config = M.editor_config(options) }
      or vim.empty_dict(),
    on_init = on_init,
    on_exit = function(code, signal, client_id)
      require('totem.restart').on_exit(code, signal, client_id)
    end,
    handlers = {
      ['totem/event'] = function(_, params, ctx)
        -- A job's events come also between turns and for sessions the chat no longer shows.
        if type(params) == 'table' and params.kind == 'job' then
          return require('totem.jobs').on_event(params, ctx.client_id)
        end
        require('totem.chat').on_event(params, ctx.client_id)
      end,
      ['totem/permission'] = function(_, params, ctx)
        return require('totem.permission').permission(params, ctx)
      end,
      ['totem/question'] = function(_, params, ctx)
        return require('totem.permission').question(params, ctx)
      end,
      ['totem/trust'] = function(_, params, ctx)
        return require('totem.permission').trust(params, ctx)
      end,
      ['workspace/applyEdit'] = M.apply_edit,
    },
  }
end

function M.setup(options)
  M.options = options
  vim.lsp.config(M.name, M.lsp_config(options))
  vim.lsp.enable(M.name)
end

--- The Totem client for a buffer: attached to it, else the chat's, else any running one.
function M.get(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local attached = vim.lsp.get_clients({ name = M.name, bufnr = bufnr })
  if attached[1] then
    return attached[1]
  end
  local chat_client = require('totem.chat').state.client_id
  if chat_client then
    local client = vim.lsp.get_client_by_id(chat_client)
    if client and not client:is_stopped() then
      return client
    end
  end
  return vim.lsp.get_clients({ name = M.name })[1]
end

--- A request; `cb(err, result)` runs on the main loop. Errors are shown unless cb handles them.
function M.request(client, method, params, cb)
  local ok, id = client:request(method, params, function(err, result)
    if cb then
      cb(err, result)
    elseif err then
      notify(method .. ': ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end)
  if not ok then
    notify(method .. ': the server is not running', vim.log.levels.ERROR)
  end
  return ok and id or nil
end

function M.notify_server(client, method, params)
  return client:notify(method, params)
end

return M
