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

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const coreDir = path.join(here, '..', 'tests', 'conformance', 'node_modules', '@google', 'gemini-cli-core');
const { IdeClient, IDEConnectionStatus } = await import(
  pathToFileURL(path.join(coreDir, 'dist', 'src', 'ide', 'ide-client.js')).href
);
for (const name of ['log', 'info', 'debug', 'warn', 'error']) console[name] = () => {}; // stdout is data

const [count, size] = process.argv.slice(2, 4).map(Number);
const answerOnly = process.argv[4] === 'answer-only';
const content = ('x'.repeat(63) + '\n').repeat(Math.max(1, Math.floor(size / 64)));

const ideClient = await IdeClient.getInstance();
await ideClient.connect({ logToConsole: false });
if (ideClient.getConnectionStatus().status !== IDEConnectionStatus.Connected) {
  process.stderr.write(`not connected: ${ideClient.getConnectionStatus().details}\n`);
  process.exit(3);
}
const mcp = ideClient.client; // the MCP SDK client the IdeClient talks through

const answer = [];
for (let i = 0; i < count; i++) {
  const start = performance.now();
  const result = await mcp.callTool({ name: 'openDiff', arguments: { filePath: `/bench/answer-${i}.txt`, newContent: content } });
  answer.push(performance.now() - start);
  if (result.isError) throw new Error(JSON.stringify(result.content));
}
const outcome = [];
for (let i = 0; i < (answerOnly ? 0 : count); i++) {
  const start = performance.now();
  const result = await ideClient.openDiff(`/bench/outcome-${i}.txt`, content);
  outcome.push(performance.now() - start);
  if (result.status !== 'accepted' || result.content !== content) throw new Error(`unexpected outcome ${result.status}`);
}
process.stdout.write(JSON.stringify({ answer_ms: answer, outcome_ms: outcome }) + '\n');
await ideClient.disconnect();
process.exit(0);
