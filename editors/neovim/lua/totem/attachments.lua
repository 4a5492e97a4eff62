-- Images attached to the chat's next message (:TotemAttach): checked here against what the
-- server takes (docs/protocol.md, totem/chat, "Images"), so a wrong file is refused at once
-- rather than failing the whole message; sent as `file:` URIs the server reads.
local M = {}

M.MIME = { png = 'image/png', jpg = 'image/jpeg', jpeg = 'image/jpeg', gif = 'image/gif', webp = 'image/webp' }
M.MAX_BYTES = 5 * 1024 * 1024 -- the server's MAX_IMAGE_BYTES

--- Bytes for people, as the server's captions write them: `38 KB`, `1.2 MB`.
local function size_text(size)
  if size >= 1024 * 1024 then
    return ('%.1f MB'):format(size / (1024 * 1024))
  end
  return ('%d KB'):format(math.max(1, math.floor(size / 1024 + 0.5)))
end

--- The attachment for the file `path`: {path, name, size, mimeType, uri}; or nil and why not.
function M.image(path)
  local full = vim.fn.fnamemodify(vim.fn.expand(path), ':p')
  local stat = vim.uv.fs_stat(full)
  if not stat or stat.type ~= 'file' then
    return nil, ('no such file: %s'):format(path)
  end
  local mime = M.MIME[(vim.fn.fnamemodify(full, ':e')):lower()]
  if not mime then
    return nil, ('not an image (png, jpg, jpeg, gif or webp): %s'):format(path)
  end
  if stat.size > M.MAX_BYTES then
    return nil, ('%s is %s, over the 5 MB an image may have'):format(path, size_text(stat.size))
  end
  local name = vim.fn.fnamemodify(full, ':t')
  return { path = full, name = name, size = stat.size, mimeType = mime, uri = vim.uri_from_fname(full) }
end

--- How the chat shows a pending attachment: `[image: shot.png, 38 KB]`.
function M.label(item)
  return ('[image: %s, %s]'):format(item.name, size_text(item.size))
end

--- totem/chat's `attachments` for `items`.
function M.params(items)
  return vim.tbl_map(function(item)
    return { type = 'image', mimeType = item.mimeType, uri = item.uri }
  end, items)
end

return M
