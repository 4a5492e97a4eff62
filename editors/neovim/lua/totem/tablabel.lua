-- A clear label for a tab Totem opens (the proposal's diff tab, permission.lua): "Totem review:
-- controllers/api.js". Neovim's own tab line names a tab by its buffer with every directory cut to
-- a letter, so the proposal's `totem://proposal/controllers/api.js` showed as `t//p/c/api.js`.
-- While such a tab is open, and only when the user has no 'tabline' of their own, the tab line is
-- drawn here: the other tabs as Neovim draws them (windows, `+`, the shortened name), a labelled
-- tab by its label; the user's empty 'tabline' comes back when the last labelled tab closes.
local M = {}

local OURS = "%!v:lua.require'totem.tablabel'.render()"
local VAR = 'totem_label'

local function own_label(tab)
  local ok, label = pcall(vim.api.nvim_tabpage_get_var, tab, VAR)
  return ok and label or nil
end

--- A tab's label as Neovim's default tab line has it: its windows when more than one, `+` when
--- one of its buffers is modified, the current window's buffer name with its directories cut.
local function default_label(tab)
  local wins = vim.api.nvim_tabpage_list_wins(tab)
  local modified = false
  for _, win in ipairs(wins) do
    modified = modified or vim.bo[vim.api.nvim_win_get_buf(win)].modified
  end
  local name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_get_win(tab)))
  name = name == '' and '[No Name]' or vim.fn.pathshorten(vim.fn.fnamemodify(name, ':~:.'))
  local head = (#wins > 1 and tostring(#wins) or '') .. (modified and '+' or '')
  return (head ~= '' and (head .. ' ') or '') .. name
end

--- The tab line ('tabline' while a labelled tab is open).
function M.render()
  local out = {}
  local current = vim.api.nvim_get_current_tabpage()
  for n, tab in ipairs(vim.api.nvim_list_tabpages()) do
    local label = (own_label(tab) or default_label(tab)):gsub('%%', '%%%%')
    table.insert(out, ('%s%%%dT %s '):format(tab == current and '%#TabLineSel#' or '%#TabLine#', n, label))
  end
  local close = #out > 1 and '%=%#TabLine#%999XX' or ''
  return table.concat(out) .. '%#TabLineFill#%T' .. close
end

--- Puts the user's tab line back when no labelled tab is left.
local function release()
  for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
    if own_label(tab) then
      return
    end
  end
  if vim.o.tabline == OURS then
    vim.o.tabline = ''
  end
end

--- Labels `tab` with `label` in the tab line (see the top).
function M.name(tab, label)
  vim.api.nvim_tabpage_set_var(tab, VAR, label)
  if vim.o.tabline == '' then
    vim.o.tabline = OURS
  end
  vim.api.nvim_create_autocmd('TabClosed', {
    group = vim.api.nvim_create_augroup('totem.tablabel', { clear = true }),
    callback = function()
      vim.schedule(release)
    end,
  })
end

return M
