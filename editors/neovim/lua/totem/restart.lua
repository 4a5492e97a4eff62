-- When `totem lsp` dies (a crash, a kill: a non-zero exit code or a signal, not a stop that
-- Neovim or the user asked for), the plugin says so, marks the turns it was running as over
-- (their running calls interrupted), and starts the server again for the buffers it served,
-- after a short wait that doubles each time. Bounded: at most MAX_RESTARTS within WINDOW
-- seconds; after that it says so and leaves it to :TotemRestart. Once the new server is
-- initialized, each chat of the old one takes it up and shows its session as stored
-- (chat.take_up).
local client = require('totem.client')

local M = {}

M.MAX_RESTARTS = 3
M.WINDOW = 120 -- seconds
M.FIRST_WAIT = 200 -- milliseconds before the first restart; doubled for each recent one

local recent = {} -- root -> the times (vim.uv.now(), ms) of its recent restarts

local function recent_restarts(root)
  local now = vim.uv.now()
  local kept = vim.tbl_filter(function(t)
    return now - t < M.WINDOW * 1000
  end, recent[root] or {})
  recent[root] = kept
  return kept
end

--- Starts a server for `root` again, attached to `buffers` (those the old one served that are
--- still loaded), or to none.
local function start(root, buffers)
  local config = vim.deepcopy(vim.lsp.config[client.name])
  config.root_dir = root
  local started = false
  for _, bufnr in ipairs(buffers) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      vim.lsp.start(config, { bufnr = bufnr })
      started = true
    end
  end
  if not started then
    vim.lsp.start(config, { attach = false })
  end
end

local function describe(code, signal)
  if signal and signal ~= 0 then
    return ('signal %d'):format(signal)
  end
  return ('exit code %d'):format(code or 0)
end

--- The client's on_exit: restart unless the stop was asked for (Neovim quitting, client:stop()).
function M.on_exit(code, signal, client_id)
  local c = vim.lsp.get_client_by_id(client_id)
  -- `_is_stopping` is set by Client:stop(), Neovim's and the user's; there is no public flag.
  local asked = c and c._is_stopping
  if vim.v.exiting ~= vim.NIL or asked or (code == 0 and signal == 0) or not c then
    return
  end
  local root = c.root_dir
  local buffers = vim.tbl_keys(c.attached_buffers or {})
  vim.schedule(function()
    require('totem.chat').server_stopped(client_id)
    require('totem.permission').close_for_client(client_id)
    local done = recent_restarts(root)
    if #done >= M.MAX_RESTARTS then
      client.notify(
        ('the server stopped (%s) %d times in %d s: not restarting it (:TotemRestart does)'):format(
          describe(code, signal),
          #done + 1,
          M.WINDOW
        ),
        vim.log.levels.ERROR
      )
      return
    end
    table.insert(done, vim.uv.now())
    client.notify(
      ('the server stopped (%s); restarting it (%d of %d)'):format(describe(code, signal), #done, M.MAX_RESTARTS),
      vim.log.levels.WARN
    )
    vim.defer_fn(function()
      start(root, buffers)
    end, M.FIRST_WAIT * 2 ^ (#done - 1))
  end)
end

--- The client's on_init: the chats of a server that is gone take up this one.
function M.on_init(c)
  require('totem.chat').take_up(c)
end

--- :TotemRestart: the Totem servers stopped and started again (the bound starts over).
function M.restart_now()
  local clients = vim.lsp.get_clients({ name = client.name })
  if #clients == 0 then
    -- None runs (it died too often): start one for the chats' roots.
    local roots = {}
    for _, chat in ipairs(require('totem.chat').chats) do
      if chat.root then
        roots[chat.root] = true
      end
    end
    for root in pairs(roots) do
      recent[root] = nil
      start(root, {})
    end
    return
  end
  for _, c in ipairs(clients) do
    local root, buffers = c.root_dir, vim.tbl_keys(c.attached_buffers or {})
    recent[root] = nil
    c:stop()
    local id = c.id
    -- Started again once the old one is gone (vim.lsp.start would take it up otherwise).
    vim.wait(5000, function()
      return vim.lsp.get_client_by_id(id) == nil
    end, 50)
    start(root, buffers)
  end
end

return M
