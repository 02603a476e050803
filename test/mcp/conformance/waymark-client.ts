// The client under test for @modelcontextprotocol/conformance's client scenarios: Waymark's own MCP
// client (src/mcp/sdk-mcp-connector.ts, what every replica calls MCP servers through), driven the way
// a run drives it: list the server's tools (connect, initialize), then call the scenario's tool.
// The runner appends the scenario server's URL and sets MCP_CONFORMANCE_SCENARIO.
import { SdkMcpConnector } from '../../../src/mcp/sdk-mcp-connector.js';
import { MemoryStore } from '../../../src/store/memory/memory-store.js';

const url = process.argv.at(-1)!;
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const store = new MemoryStore();
const { server } = await store.mcpServerPut({ namespace: 'default', name: 'conformance', transport: { kind: 'http', url, headers: {} }, tools: {} });
const connector = new SdkMcpConnector({ store, clientName: 'waymark-conformance' });
const signal = AbortSignal.timeout(20_000);
try {
  const tools = await connector.listTools(server, signal);
  const args: Record<string, Record<string, number>> = { add_numbers: { a: 5, b: 3 } };
  // tools_call: call what the server offers; initialize offers nothing; sse-retry's tool closes its stream.
  for (const tool of tools) {
    const result = await connector.callTool({ server, tool: tool.name, args: args[tool.name] ?? {}, idempotencyKey: `conformance:${scenario}:${tool.name}`, signal });
    console.log(`${tool.name}: ${JSON.stringify(result)}`);
  }
} finally {
  await connector.close();
}
