// Preloaded into the MCP conformance suite (node --import): every request it sends to the server
// under test carries `Authorization: Bearer $CONFORMANCE_TOKEN`, since `totem mcp serve --http`
// refuses any other and the suite has no option for headers. The suite sends through undici (its
// own `request` and Node's fetch share the global dispatcher) and, for raw header tests, through
// node:http; both are wrapped for the server's origin only.
import http from "node:http";
import { createRequire } from "node:module";

const { Agent, setGlobalDispatcher } = createRequire(process.env.CONFORMANCE_SUITE + "/")("undici");
const origin = new URL(process.env.CONFORMANCE_URL).origin;
const [name, value] = ["authorization", `Bearer ${process.env.CONFORMANCE_TOKEN}`];

const withToken = (headers) =>
  Array.isArray(headers) ? [...headers, name, value] : { ...(headers ?? {}), [name]: value };

setGlobalDispatcher(
  new Agent().compose((dispatch) => (options, handler) =>
    dispatch(new URL(options.origin).origin === origin ? { ...options, headers: withToken(options.headers) } : options, handler),
  ),
);

const request = http.request;
http.request = (options, ...rest) => {
  const ours = typeof options === "object" && !(options instanceof URL) && `http://${options.hostname}:${options.port}` === origin;
  return request(ours ? { ...options, headers: withToken(options.headers) } : options, ...rest);
};
