#!/usr/bin/env node
// ide_client_driver.mjs — drives the REAL IdeClient of @google/gemini-cli-core for the conformance tests.
//
// It does what Gemini CLI does when it runs inside Sublime's Terminus: TERM_PROGRAM=Terminus-Sublime,
// cwd = the folder it was started in, IdeClient.getInstance() (process walk or GEMINI_CLI_IDE_PID, then
// discovery files in <os.tmpdir()>/gemini/ide), connect(), and for diffs the client's own openDiff() and
// resolveDiffFromCli() (the terminal's answer, which calls closeDiff). Env fallbacks the client reads
// itself (GEMINI_CLI_IDE_SERVER_PORT, GEMINI_CLI_IDE_AUTH_TOKEN, GEMINI_CLI_IDE_WORKSPACE_PATH) are
// passed through untouched.
//
// Protocol: one JSON object per line.
//   stdout events:
//     {"event":"connected","ide":{name,displayName},"idePid":N,"tools":[...],"diffing":bool,"url":..}
//     {"event":"context","context":<ideContextStore.get() after the client's normalisation, or null>}
//     {"event":"notification","method":"ide/...","params":{...}}   raw ide/* notifications as received
//     {"event":"diff","id":..,"filePath":..,"status":"accepted"|"rejected","content":<string|null>}
//     {"event":"closed","id":..,"filePath":..,"diffId":<openDiff id or null>,
//      "status":<what the pending openDiff resolved to, or null if none was pending>,"content":<string|null>}
//     {"event":"disconnected","details":..}                       the client dropped after connecting
//     {"event":"error","stage":"load"|"connect"|"command",("id":..,)"message":..}
//     {"event":"bye"}
//   stdin commands:
//     {"cmd":"openDiff","id":..,"filePath":..,"newContent":..}
//     {"cmd":"closeDiff","id":..,"filePath":..(,"outcome":"accepted"|"rejected")}   default: accepted
//     {"cmd":"resolveFromCli","id":..,"filePath":..,"outcome":..}  resolveDiffFromCli alone: the pending
//                                                                 openDiff then reports as a "diff" event
//     {"cmd":"quit"}
// Everything the client logs goes to stderr, so stdout carries only events.
//
// The client package is found at ./node_modules/@google/gemini-cli-core next to this file, or at
// $GCLI_CORE_DIR.

import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const writeStdout = process.stdout.write.bind(process.stdout);
const emit = (obj) => writeStdout(JSON.stringify(obj) + '\n');
const toStderr = (...args) => {
  const line = args
    .map((a) => (typeof a === 'string' ? a : a instanceof Error ? a.stack ?? a.message : safeJson(a)))
    .join(' ');
  process.stderr.write(line + '\n');
};
function safeJson(value) {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
for (const name of ['log', 'info', 'debug', 'warn', 'error', 'trace']) console[name] = toStderr;

// What Terminus gives the CLI; the harness sets these too, these are only defaults.
process.env.TERM_PROGRAM ??= 'Terminus-Sublime';
// Inside a container the client would otherwise connect to host.docker.internal (getIdeServerHost).
process.env.SSH_CONNECTION ??= 'ide-client-driver 0 127.0.0.1 0';

process.on('uncaughtException', (e) => {
  emit({ event: 'error', stage: 'uncaught', message: e?.stack ?? String(e) });
});
process.on('unhandledRejection', (e) => {
  emit({ event: 'error', stage: 'unhandled', message: e?.stack ?? String(e) });
});

const here = path.dirname(fileURLToPath(import.meta.url));
const coreDir = process.env.GCLI_CORE_DIR ?? path.join(here, 'node_modules', '@google', 'gemini-cli-core');
const ideDir = path.join(coreDir, 'dist', 'src', 'ide');
let IdeClient, IDEConnectionStatus, ideContextStore, coreVersion;
try {
  const imp = (f) => import(pathToFileURL(path.join(ideDir, f)).href);
  ({ IdeClient, IDEConnectionStatus } = await imp('ide-client.js'));
  ({ ideContextStore } = await imp('ideContext.js'));
  coreVersion = JSON.parse(fs.readFileSync(path.join(coreDir, 'package.json'), 'utf8')).version;
} catch (e) {
  emit({ event: 'error', stage: 'load', message: `cannot load the IdeClient from ${ideDir}: ${e?.stack ?? e}` });
  process.exit(2);
}

ideContextStore.subscribe((ctx) => emit({ event: 'context', context: ctx ?? null }));

const ideClient = await IdeClient.getInstance();
let connected = false;
ideClient.addStatusChangeListener((state) => {
  if (connected && state.status === IDEConnectionStatus.Disconnected) {
    connected = false;
    emit({ event: 'disconnected', details: state.details ?? '' });
  }
});

await ideClient.connect({ logToConsole: false });
const state = ideClient.getConnectionStatus();
if (state.status !== IDEConnectionStatus.Connected) {
  emit({
    event: 'error',
    stage: 'connect',
    message: state.details ?? `status ${state.status}`,
    ide: ideClient.getCurrentIde() ?? null,
    idePid: ideClient.ideProcessInfo?.pid ?? null,
  });
  process.exit(3);
}
connected = true;

// Tap the raw ide/* notifications (before the client's own handlers see them), so a test can tell
// "the companion sent nothing" from "the client ignored it".
const transport = ideClient.client?.transport;
if (transport) {
  const original = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message && typeof message.method === 'string' && message.method.startsWith('ide/') && message.id === undefined) {
      emit({ event: 'notification', method: message.method, params: message.params ?? null });
    }
    original?.call(transport, message, extra);
  };
}

emit({
  event: 'connected',
  ide: ideClient.getCurrentIde() ?? null,
  idePid: ideClient.ideProcessInfo?.pid ?? null,
  tools: ideClient.availableTools ?? [],
  diffing: ideClient.isDiffingEnabled(),
  url: transport?._url?.href ?? null,
  coreVersion,
});

// openDiff id -> {filePath, promise, closedBy}
const pending = new Map();

function openDiff(cmd) {
  const { id, filePath, newContent } = cmd;
  // The CLI only asks the IDE when diffing is enabled (write-file.ts / edit.ts).
  if (!ideClient.isDiffingEnabled()) {
    emit({ event: 'error', stage: 'command', id, message: 'isDiffingEnabled() is false: the CLI would not open a diff' });
    return;
  }
  const entry = { id, filePath, closedBy: null, promise: null };
  entry.promise = ideClient.openDiff(filePath, newContent);
  pending.set(id, entry);
  entry.promise.then(
    (result) => {
      pending.delete(id);
      if (entry.closedBy !== null) return; // answered in the terminal: the closeDiff handler reports it
      emit({ event: 'diff', id, filePath, status: result.status, content: result.content ?? null });
    },
    (err) => {
      pending.delete(id);
      emit({ event: 'error', stage: 'command', id, message: `openDiff failed: ${err?.message ?? err}` });
    },
  );
}

async function closeDiff(cmd) {
  const { id, filePath } = cmd;
  const outcome = cmd.outcome ?? 'accepted';
  // The CLI resolves a pending IDE diff from the terminal with resolveDiffFromCli, which calls
  // closeDiff(filePath, {suppressNotification: true}) and settles the openDiff promise itself.
  let entry = null;
  for (const e of pending.values()) if (e.filePath === filePath && e.closedBy === null) entry = e;
  if (entry && ideClient.diffResponses?.has(filePath)) {
    entry.closedBy = id;
    await ideClient.resolveDiffFromCli(filePath, outcome);
    const result = await entry.promise;
    emit({ event: 'closed', id, filePath, diffId: entry.id, status: result.status, content: result.content ?? null });
    return;
  }
  const content = await ideClient.closeDiff(filePath, { suppressNotification: true });
  emit({ event: 'closed', id, filePath, diffId: null, status: null, content: content ?? null });
}

let quitting = false;
async function quit() {
  if (quitting) return;
  quitting = true;
  connected = false;
  try {
    await ideClient.disconnect();
  } catch (e) {
    toStderr('disconnect failed:', e);
  }
  emit({ event: 'bye' });
  process.exit(0);
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (!line.trim()) return;
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (e) {
    emit({ event: 'error', stage: 'command', message: `not JSON: ${line}` });
    return;
  }
  const run = async () => {
    if (cmd.cmd === 'openDiff') openDiff(cmd);
    else if (cmd.cmd === 'closeDiff') await closeDiff(cmd);
    else if (cmd.cmd === 'resolveFromCli') await ideClient.resolveDiffFromCli(cmd.filePath, cmd.outcome ?? 'accepted');
    else if (cmd.cmd === 'quit') await quit();
    else emit({ event: 'error', stage: 'command', id: cmd.id ?? null, message: `unknown command ${cmd.cmd}` });
  };
  run().catch((e) => emit({ event: 'error', stage: 'command', id: cmd.id ?? null, message: e?.stack ?? String(e) }));
});
rl.on('close', () => void quit());
