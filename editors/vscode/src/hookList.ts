// The hooks the config files declare (`totem/hooks`) as "Totem: Show Hooks" lists them: one quick
// pick item a hook, and the file it is declared in. No `vscode` here.

import { isAbsolute } from "path";
import type { HookInfo } from "./protocol";

export const NO_HOOKS = "No hooks are configured (see docs/config.md, Hooks)";

export interface HookItem {
  label: string;
  description: string;
  detail: string;
  /** The config file to open; undefined when the hook is not in a file ("editor settings"). */
  file: string | undefined;
}

/** `label` the event and matcher (`*`: every one), `description` the command, `detail` the
 * source and whether it runs. `home` expands the `~` the server writes for the home directory. */
export function hookItem(hook: HookInfo, home: string): HookItem {
  return {
    label: `${hook.event} [${hook.matcher ?? "*"}]`,
    description: hook.command,
    detail: `${hook.source} · ${hook.active ? "active" : `ignored: ${hook.ignored ?? ""}`}`,
    file: hookFile(hook.source, home),
  };
}

function hookFile(source: string, home: string): string | undefined {
  if (source.startsWith("~/")) return home.replace(/\/$/, "") + source.slice(1);
  return isAbsolute(source) ? source : undefined;
}
