#!/usr/bin/env node
// node_reference_server.mjs: the Node reference for bench_reference.py. It is the VS Code companion's
// server stack (packages/vscode-ide-companion/src/ide-server.ts, as described in
// /work/shared/reference/gemini-cli-contract.md §8): express with a 10 MB JSON body limit, the same
// Origin/Host/bearer checks, one stateful StreamableHTTPServerTransport of @modelcontextprotocol/sdk
// per session (SSE-framed POST replies, the SDK default), openDiff/closeDiff tools, and
// ide/contextUpdate with a trailing 50 ms debounce. Only the editor is missing: every diff is
// accepted the instant it is shown (ide/diffAccepted with the proposed content, to every session),
// as in bench_core.py's accepting window.
//
//   node bench/node_reference_server.mjs <editor-pid> <tmpdir> <workspace>
//
// Writes its discovery file in <tmpdir>/gemini/ide, prints "listening <port>", then reads commands
// on stdin: "context <n>" moves the active file n times, 80 ms apart, and prints the times of the
// changes as one JSON line (process.hrtime in ms: CLOCK_MONOTONIC on Linux, like the client's).

import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, '..', 'tests', 'conformance', 'node_modules');
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const { default: express } = await load('express/index.js');
const { McpServer } = await load('@modelcontextprotocol/sdk/dist/esm/server/mcp.js');
const { StreamableHTTPServerTransport } = await load('@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js');
const { isInitializeRequest } = await load('@modelcontextprotocol/sdk/dist/esm/types.js');
const { z } = await load('zod/index.js');

const [editorPid, tmpdir, workspace] = process.argv.slice(2);
const authToken = randomUUID();
const transports = {};
const greeted = new WeakSet();
let openFiles = [];

const now = () => Number(process.hrtime.bigint()) / 1e6;

function broadcast(method, params) {
  for (const transport of Object.values(transports)) {
    transport.send({ jsonrpc: '2.0', method, params }).catch(() => {});
  }
}

function createMcpServer() {
  const server = new McpServer({ name: 'gemini-cli-companion-mcp-server', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool(
    'openDiff',
    { description: 'Open a diff view', inputSchema: { filePath: z.string(), newContent: z.string() } },
    async ({ filePath, newContent }) => {
      // showDiff, and the user accepts the instant it is shown (the proposal is the accepted content),
      // before the tool answers: as bench_reference.py's editor does for ours (HeadlessEditor "accept").
      broadcast('ide/diffAccepted', { filePath, content: newContent });
      return { content: [] };
    },
  );
  server.registerTool(
    'closeDiff',
    { description: 'Close a diff view', inputSchema: { filePath: z.string(), suppressNotification: z.boolean().optional() } },
    async () => ({ content: [{ type: 'text', text: JSON.stringify({}) }] }),
  );
  return server;
}

const app = express();
app.use(express.json({ limit: '10mb' }));
app.use((req, res, next) => {
  if (req.headers.origin) return res.status(403).json({ error: 'Request denied by CORS policy.' });
  next();
});
app.use((req, res, next) => {
  const host = req.headers.host;
  if (host !== `localhost:${port}` && host !== `127.0.0.1:${port}`) return res.status(403).json({ error: 'Invalid Host header' });
  next();
});
app.use((req, res, next) => {
  const parts = (req.headers.authorization ?? '').split(' ');
  if (parts.length !== 2 || parts[0] !== 'Bearer' || parts[1] !== authToken) return res.status(401).send('Unauthorized');
  next();
});

app.post('/mcp', async (req, res) => {
  const sessionId = req.headers['mcp-session-id'];
  let transport = sessionId ? transports[sessionId] : undefined;
  if (!transport) {
    if (sessionId || !isInitializeRequest(req.body)) {
      res.status(400).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided for non-initialize request.' }, id: null });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports[id] = transport;
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) delete transports[transport.sessionId];
    };
    await createMcpServer().connect(transport);
  }
  try {
    await transport.handleRequest(req, res, req.body);
  } catch (error) {
    if (!res.headersSent) res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null });
  }
});

app.get('/mcp', async (req, res) => {
  const transport = transports[req.headers['mcp-session-id']];
  if (!transport) return res.status(400).send('Invalid or missing session ID');
  await transport.handleRequest(req, res);
  if (!greeted.has(transport)) {
    greeted.add(transport); // after the first GET of a session, the current context (as ide-server.ts)
    transport.send({ jsonrpc: '2.0', method: 'ide/contextUpdate', params: { workspaceState: { openFiles } } }).catch(() => {});
  }
});

let debounce;
function contextChanged() {
  clearTimeout(debounce);
  debounce = setTimeout(() => broadcast('ide/contextUpdate', { workspaceState: { openFiles } }), 50); // trailing debounce
}

const httpServer = app.listen(0, '127.0.0.1');
await new Promise((resolve) => httpServer.once('listening', resolve));
const port = httpServer.address().port;
const ideDir = path.join(tmpdir, 'gemini', 'ide');
await fs.mkdir(ideDir, { recursive: true });
const ideInfo = { name: 'sublimetext', displayName: 'Sublime Text' }; // the client must accept the file: same as ours
await fs.writeFile(
  path.join(ideDir, `gemini-ide-server-${editorPid}-${port}.json`),
  JSON.stringify({ port, workspacePath: workspace, authToken, ideInfo }),
);
process.stdout.write(`listening ${port}\n`);

for await (const line of readline.createInterface({ input: process.stdin })) {
  const [command, count] = line.trim().split(' ');
  if (command !== 'context') continue;
  const triggers = [];
  for (let i = 0; i < Number(count); i++) {
    const filePath = path.join(workspace, `file-${i}.py`);
    triggers.push([now(), i + 1]);
    openFiles = [{ path: filePath, timestamp: Date.now(), isActive: true, cursor: { line: i + 1, character: 1 } }];
    contextChanged();
    await new Promise((resolve) => setTimeout(resolve, 80));
  }
  process.stdout.write(JSON.stringify(triggers) + '\n');
}
