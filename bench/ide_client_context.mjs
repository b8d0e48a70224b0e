#!/usr/bin/env node
// ide_client_context.mjs: records every context Gemini CLI's own IdeClient (@google/gemini-cli-core,
// from tests/conformance/node_modules) takes in, with the time it got there, for bench_adapter.py.
//
// The client finds the companion as Gemini CLI does (GEMINI_CLI_IDE_PID, TMPDIR, the working directory
// as workspace). It prints "ready" once the first context has arrived, records until its stdin closes,
// then prints one JSON line: [[receipt time in ms, cursor line, cursor character], ...].
// Times are process.hrtime (CLOCK_MONOTONIC on Linux, the clock of Python's time.monotonic), so they
// compare with the trigger times bench_adapter.py takes in its own process.

import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ideDir = path.join(here, '..', 'tests', 'conformance', 'node_modules', '@google', 'gemini-cli-core', 'dist', 'src', 'ide');
const { IdeClient, IDEConnectionStatus } = await import(pathToFileURL(path.join(ideDir, 'ide-client.js')).href);
const { ideContextStore } = await import(pathToFileURL(path.join(ideDir, 'ideContext.js')).href);
for (const name of ['log', 'info', 'debug', 'warn', 'error']) console[name] = () => {}; // stdout is data

const received = [];
let ready = false;
ideContextStore.subscribe((context) => {
  const at = Number(process.hrtime.bigint()) / 1e6;
  const active = (context?.workspaceState?.openFiles ?? []).find((file) => file.isActive);
  const cursor = active?.cursor;
  received.push([at, cursor?.line ?? null, cursor?.character ?? null]);
  if (!ready) {
    ready = true;
    process.stdout.write('ready\n');
  }
});

const ideClient = await IdeClient.getInstance();
await ideClient.connect({ logToConsole: false });
if (ideClient.getConnectionStatus().status !== IDEConnectionStatus.Connected) {
  process.stderr.write(`not connected: ${ideClient.getConnectionStatus().details}\n`);
  process.exit(3);
}
process.stdin.resume();
process.stdin.on('end', async () => {
  await new Promise((resolve) => setTimeout(resolve, 500));
  process.stdout.write(JSON.stringify(received) + '\n');
  await ideClient.disconnect();
  process.exit(0);
});
