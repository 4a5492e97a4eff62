// A real `totem lsp` process over stdio, with a user config that points at a loopback model
// server, and a TotemClient on a vscode-jsonrpc connection to it.

import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { pathToFileURL } from "url";
import { StreamMessageReader, StreamMessageWriter, createMessageConnection, MessageConnection } from "vscode-jsonrpc/node";
import { CLIENT_CAPABILITIES, PermissionAnswer, PermissionParams, QuestionParams, TotemClient, TotemUi } from "../../src/protocol";
import { ModelServer } from "./modelServer";

/** `totem`: $TOTEM_PATH, else the repository's .venv. */
export function totemPath(): string {
  if (process.env.TOTEM_PATH) return process.env.TOTEM_PATH;
  return path.resolve(__dirname, "..", "..", "..", "..", "..", ".venv", "bin", "totem");
}

export class ScriptedUi implements TotemUi {
  permissions: PermissionParams[] = [];
  questions: QuestionParams[] = [];
  /** The answers, in order; a function answers from the question (a reviewed change). */
  permissionAnswers: (PermissionAnswer | ((p: PermissionParams) => PermissionAnswer))[] = [];
  async permission(p: PermissionParams): Promise<PermissionAnswer> {
    this.permissions.push(p);
    const answer = this.permissionAnswers.shift() ?? { outcome: "reject_once" };
    return typeof answer === "function" ? answer(p) : answer;
  }
  async question(p: QuestionParams) {
    this.questions.push(p);
    return { answer: p.options?.[p.options.length - 1] ?? "yes" };
  }
  async trust() {
    return { trusted: false };
  }
}

export interface Server {
  totem: TotemClient;
  connection: MessageConnection;
  process: ChildProcess;
  project: string;
  ui: ScriptedUi;
  model: ModelServer;
  initializeResult: any;
  stderr: string[];
  close(): Promise<void>;
}

export async function startServer(): Promise<Server> {
  const model = await new ModelServer().start();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "totem-vscode-test-"));
  const project = path.join(tmp, "project");
  fs.mkdirSync(project);
  fs.mkdirSync(path.join(tmp, "config", "totem"), { recursive: true });
  fs.writeFileSync(
    path.join(tmp, "config", "totem", "config.toml"),
    // forge = false: the empty project is a Total.js one, whose built-in Forge would ask to start.
    // The model sees images (for attachments).
    `model = "sim/test-model"\nretry_max_wait = 1.0\nforge = false\n\n[providers.sim]\nkind = "openai"\nbase_url = "${model.baseUrl}"\n\n[models."sim/test-model"]\nvision = true\n`,
  );
  const env = { ...process.env, XDG_CONFIG_HOME: path.join(tmp, "config"), XDG_DATA_HOME: path.join(tmp, "data") };
  const child = spawn(totemPath(), ["lsp"], { cwd: project, env, stdio: ["pipe", "pipe", "pipe"] });
  const stderr: string[] = [];
  child.stderr!.on("data", (d) => stderr.push(String(d)));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  const ui = new ScriptedUi();
  const totem = new TotemClient(connection, ui);
  totem.listen();
  connection.onRequest("workspace/applyEdit", () => ({ applied: false, failureReason: "not open" }));
  connection.onNotification(() => undefined);
  connection.listen();
  const initializeResult = await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: pathToFileURL(project).toString(),
    workspaceFolders: [{ uri: pathToFileURL(project).toString(), name: "project" }],
    capabilities: { experimental: { totem: CLIENT_CAPABILITIES }, window: { workDoneProgress: true } },
  });
  await connection.sendNotification("initialized", {});
  return {
    totem,
    connection,
    process: child,
    project,
    ui,
    model,
    initializeResult,
    stderr,
    async close() {
      try {
        await Promise.race([connection.sendRequest("shutdown"), new Promise((r) => setTimeout(r, 5000))]);
        await connection.sendNotification("exit");
      } catch {
        // already gone
      }
      const exited = new Promise((r) => child.once("exit", r));
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      if (child.exitCode === null) await exited;
      clearTimeout(timer);
      connection.dispose();
      await model.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}
