// A scripted OpenAI-compatible model server on loopback (the Node twin of
// tests/support/model_server.py): POST .../chat/completions streams the queued replies in order,
// GET .../models lists one model.

import * as http from "http";
import type { AddressInfo } from "net";

type Chunk = Record<string, unknown>;

function chunk(delta: Record<string, unknown>, finish: string | null = null): Chunk {
  return { id: "chatcmpl-test", object: "chat.completion.chunk", created: 0, model: "test-model", choices: [{ index: 0, delta, finish_reason: finish }] };
}

const usage: Chunk = { id: "chatcmpl-test", object: "chat.completion.chunk", created: 0, model: "test-model", choices: [], usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 } };

function pieces(text: string, n: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

export function textReply(text: string, reasoning = ""): Chunk[] {
  return [
    chunk({ role: "assistant", content: "" }),
    ...pieces(reasoning, 3).map((r) => chunk({ reasoning_content: r })),
    ...pieces(text, 4).map((t) => chunk({ content: t })),
    chunk({}, "stop"),
    usage,
  ];
}

export function toolReply(calls: [string, Record<string, unknown>][], text = ""): Chunk[] {
  const events: Chunk[] = [chunk({ role: "assistant", content: null }), ...pieces(text, 2).map((t) => chunk({ content: t }))];
  calls.forEach(([name, args], index) => {
    events.push(chunk({ tool_calls: [{ index, id: `call_${index + 1}`, type: "function", function: { name, arguments: "" } }] }));
    for (const part of pieces(JSON.stringify(args), 3)) events.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
  });
  events.push(chunk({}, "tool_calls"), usage);
  return events;
}

export class ModelServer {
  readonly requests: any[] = [];
  private queue: (Chunk[] | { status: number; message: string })[] = [];
  private server = http.createServer((req, res) => this.handle(req, res));

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return this;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  enqueue(reply: Chunk[]): void {
    this.queue.push(reply);
  }

  /** An HTTP error instead of a reply (401: a refused key, which the provider does not retry). */
  enqueueStatus(status: number, message: string): void {
    this.queue.push({ status, message });
  }

  get pending(): number {
    return this.queue.length;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const body: Buffer[] = [];
    req.on("data", (d: Buffer) => body.push(d));
    req.on("end", () => {
      if (req.method === "GET" && req.url?.replace(/\/$/, "").endsWith("/models")) {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "test-model", object: "model" }] }));
        return;
      }
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        res.writeHead(404).end();
        return;
      }
      this.requests.push(JSON.parse(Buffer.concat(body).toString() || "null"));
      const reply = this.queue.shift();
      if (!reply) {
        res.writeHead(500, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: { message: "no scripted reply" } }));
        return;
      }
      if (!Array.isArray(reply)) {
        res.writeHead(reply.status, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: { message: reply.message } }));
        return;
      }
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "close" });
      for (const event of reply) res.write(`data: ${JSON.stringify(event)}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  }
}
