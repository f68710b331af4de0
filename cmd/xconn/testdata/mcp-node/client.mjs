// The official MCP TypeScript SDK client against "xconn mcp", for
// cmd/xconn's TestNodeClient. It reads its task from env XCONN_NODE_TEST
// ({"mode":"stdio","command","args"} or {"mode":"http","url","token"},
// plus "send_tool" and "text"), then initializes, lists the tools, calls
// the send tool with text only and connector_channels_list, and prints
// one JSON summary on stdout. Errors go to stderr with exit 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const task = JSON.parse(process.env.XCONN_NODE_TEST);
const transport = task.mode === "http"
  ? new StreamableHTTPClientTransport(new URL(task.url), {
      requestInit: { headers: { Authorization: `Bearer ${task.token}` } },
    })
  : new StdioClientTransport({ command: task.command, args: task.args, env: { ...process.env }, stderr: "inherit" });

const client = new Client({ name: "xconn-node-test", version: "1.0.0" });
try {
  await client.connect(transport);
  const server = client.getServerVersion();
  let tools = [];
  for (let i = 0; i < 100; i++) { // the send tool comes once the channel is online
    tools = (await client.listTools()).tools;
    if (tools.some((t) => t.name === task.send_tool)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const send = await client.callTool({ name: task.send_tool, arguments: { text: task.text } });
  const channels = await client.callTool({ name: "connector_channels_list", arguments: {} });
  const list = tools.find((t) => t.name === "connector_channels_list");
  console.log(JSON.stringify({
    server: server.name,
    protocol: client.getServerCapabilities() ? "ok" : "none",
    tools: tools.map((t) => t.name),
    channels_list_read_only: list?.annotations?.readOnlyHint === true,
    send_is_error: send.isError === true,
    send_text: send.content?.[0]?.text ?? "",
    channels_text: channels.content?.[0]?.text ?? "",
  }));
  await client.close();
} catch (err) {
  console.error(`node client: ${err?.stack ?? err}`);
  process.exit(1);
}
