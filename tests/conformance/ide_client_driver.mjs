// The real Gemini CLI IDE client (IdeClient from @google/gemini-cli-core), driven line by line.
//
// It connects exactly as `gemini` does: discovery file in os.tmpdir()/gemini/ide chosen by the
// IDE's PID (GEMINI_CLI_IDE_PID) and the working directory, then the MCP Streamable HTTP client
// with the file's bearer token. The test talks to it over stdin/stdout, one JSON object per line.
//
// stdout events:  {"event":"connected","ide":{...},"tools":[...]}
//                 {"event":"context","context":<what the CLI stores after normalising>}
//                 {"event":"diff","id":..,"filePath":..,"status":"accepted"|"rejected","content":..}
//                 {"event":"status","status":..,"details":..}
//                 {"event":"error","message":..}
// stdin commands: {"cmd":"openDiff","id":..,"filePath":..,"newContent":..}
//                 {"cmd":"resolveFromCli","id":..,"filePath":..,"outcome":"accepted"|"rejected"}
//                 {"cmd":"quit"}
// Usage: node ide_client_driver.mjs <dir of @google/gemini-cli-core>   (cwd = the workspace)

import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';

const coreDir = process.argv[2];
const ideDir = path.join(coreDir, 'dist', 'src', 'ide');
const load = (file) => import(pathToFileURL(path.join(ideDir, file)).href);

const emit = (event) => process.stdout.write(JSON.stringify(event) + '\n');
// The client logs with console.debug/log; keep stdout for events only.
console.debug = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
console.log = console.debug;
console.info = console.debug;
console.warn = console.debug;

const { IdeClient, IDEConnectionStatus } = await load('ide-client.js');
const { ideContextStore } = await load('ideContext.js');

const client = await IdeClient.getInstance();
client.addStatusChangeListener((s) => emit({ event: 'status', status: s.status, details: s.details ?? null }));
ideContextStore.subscribe((context) => emit({ event: 'context', context: context ?? null }));

await client.connect({ logToConsole: false });
const status = client.getConnectionStatus();
if (status.status !== IDEConnectionStatus.Connected) {
  emit({ event: 'error', message: `not connected: ${status.status} ${status.details ?? ''}` });
  process.exit(3);
}
emit({ event: 'connected', ide: client.getCurrentIde() ?? null, tools: client.availableTools ?? [] });

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  if (command.cmd === 'quit') break;
  if (command.cmd === 'openDiff') {
    // Not awaited: the CLI waits for the outcome while other commands go on.
    client.openDiff(command.filePath, command.newContent).then(
      (result) => emit({ event: 'diff', id: command.id, filePath: command.filePath, ...result }),
      (error) => emit({ event: 'error', id: command.id, message: String(error?.message ?? error) }),
    );
  } else if (command.cmd === 'resolveFromCli') {
    // What the CLI does when the user answers in its own terminal: closeDiff, then settle the diff.
    client.resolveDiffFromCli(command.filePath, command.outcome).catch(
      (error) => emit({ event: 'error', id: command.id, message: String(error?.message ?? error) }),
    );
  } else {
    emit({ event: 'error', message: `unknown command ${command.cmd}` });
  }
}
await client.disconnect?.();
process.exit(0);
