#!/usr/bin/env node
// ide_client_bench.mjs: openDiff timed through Gemini CLI's own IdeClient (@google/gemini-cli-core,
// installed by the test command in tests/conformance/node_modules), the client users actually run.
//
//   node bench/ide_client_bench.mjs <count> <size-bytes> [answer-only]
//
// The client finds the companion as Gemini CLI does (GEMINI_CLI_IDE_PID, TMPDIR, the working
// directory as workspace: bench_core.py sets them). Two measurements, each `count` calls with
// `size` bytes of content, one call at a time:
//   answer:  the client's MCP `tools/call openDiff` until its answer arrives (what the CLI's
//            request costs; the companion's editor accepts at once, so its notification travels
//            in the same moments, as in the Python client's measurement);
//   outcome: `IdeClient.openDiff()` until the promise resolves, i.e. until `ide/diffAccepted`
//            has arrived and been matched: the whole loop the CLI waits on, minus the human.
// With `answer-only` (for an editor that leaves reviews open, as while the user reads them) only the
// first is measured. Prints one JSON line: {"answer_ms": [...], "outcome_ms": [...]}.
// With GEMINI_BENCH_TMPDIRS (folders joined by path.delimiter), one IdeClient per folder, each
// finding the server whose discovery file is there; they take turns call by call, so that every
// server meets the same load, and the line holds one such object per folder, in order: [{...}, ...].

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ideClientUrl = pathToFileURL(
  path.join(here, '..', 'tests', 'conformance', 'node_modules', '@google', 'gemini-cli-core', 'dist', 'src', 'ide', 'ide-client.js'),
).href;
for (const name of ['log', 'info', 'debug', 'warn', 'error']) console[name] = () => {}; // stdout is data

const [count, size] = process.argv.slice(2, 4).map(Number);
const answerOnly = process.argv[4] === 'answer-only';
const content = ('x'.repeat(63) + '\n').repeat(Math.max(1, Math.floor(size / 64)));
const folders = process.env.GEMINI_BENCH_TMPDIRS?.split(path.delimiter);

async function connect(index, folder) {
  // IdeClient is a singleton per module instance: a query string gives each folder its own.
  const { IdeClient, IDEConnectionStatus } = await import(`${ideClientUrl}?client=${index}`);
  if (folder !== undefined) process.env.TMPDIR = folder; // Node's os.tmpdir(), read when it connects
  const ideClient = await IdeClient.getInstance();
  await ideClient.connect({ logToConsole: false });
  if (ideClient.getConnectionStatus().status !== IDEConnectionStatus.Connected) {
    process.stderr.write(`not connected: ${ideClient.getConnectionStatus().details}\n`);
    process.exit(3);
  }
  return { ideClient, mcp: ideClient.client, answer_ms: [], outcome_ms: [] }; // mcp: the SDK client it talks through
}

const clients = [];
for (const [index, folder] of (folders ?? [undefined]).entries()) clients.push(await connect(index, folder));

for (let i = 0; i < count; i++) {
  for (const client of clients) {
    const filePath = `/bench/answer-${i}.txt`;
    // Taking turns, each call waits (untimed) for its own ide/diffAccepted, so that it never lands
    // in the next server's call (diffResponses: where the IdeClient matches outcomes to paths).
    const settled = folders ? new Promise((resolve) => client.ideClient.diffResponses.set(filePath, resolve)) : null;
    const start = performance.now();
    const result = await client.mcp.callTool({ name: 'openDiff', arguments: { filePath, newContent: content } });
    client.answer_ms.push(performance.now() - start);
    if (result.isError) throw new Error(JSON.stringify(result.content));
    await settled;
  }
}
for (let i = 0; i < (answerOnly ? 0 : count); i++) {
  for (const client of clients) {
    const start = performance.now();
    const result = await client.ideClient.openDiff(`/bench/outcome-${i}.txt`, content);
    client.outcome_ms.push(performance.now() - start);
    if (result.status !== 'accepted' || result.content !== content) throw new Error(`unexpected outcome ${result.status}`);
  }
}
const timings = clients.map(({ answer_ms, outcome_ms }) => ({ answer_ms, outcome_ms }));
process.stdout.write(JSON.stringify(folders ? timings : timings[0]) + '\n');
for (const { ideClient } of clients) await ideClient.disconnect();
process.exit(0);
