"""The ACP chat: how soon a reply reaches the chat view, what the client adds per update, memory per
chat session, and the window servers' start-up before and after the ACP work.

    .venv/bin/python bench/bench_acp.py [--quick] [--before DIR]

- First chunk: the time from `ChatSession.prompt()` to the first `agent_text` at the ChatView, per
  prompt, in one session: the scripted agent (tests/acp/scripted_agent.py `stream`, the SDK's agent
  side, a subprocess) and the real Gemini CLI 0.61.0 offline (`--acp --fake-responses-non-strict`,
  a recorded one-chunk text turn per prompt).
- Per update: the scripted agent stamps each chunk's text with time.monotonic_ns() just before its
  write (system-wide on Linux, so comparable across processes) and the previous write's duration;
  the view takes time.monotonic_ns() when the chunk arrives. Client latency = arrival - stamp, set
  against the agent's own write duration.
- Memory: RSS of this process after one idle chat session (the SDK imported) and after N more
  idle sessions (scripted agent), per session; the agents' own processes are not counted.
- Start: bench_core.start_time (a fresh interpreter starts one window server: warm and cold) run
  from `--before DIR` (a worktree of the commit before the ACP work) and from `--after DIR` (this
  checkout by default), taking turns run by run; and whether starting imports any `acp` module.

Prints a Markdown table and writes bench/results/acp.json (not with --quick).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import psutil  # noqa: E402
from _stats import percentile  # noqa: E402

from companion.acp.agents.agents import AgentSpec  # noqa: E402
from companion.headless.editor import HeadlessEditor  # noqa: E402
from tests.acp.conftest import RecordingView  # noqa: E402
from tests.conformance.harness import PINNED, make_gemini_home, node, recorded_turns  # noqa: E402

AGENT = os.path.join(ROOT, "tests", "acp", "scripted_agent.py")


class TimedView(RecordingView):
    """Records when each reply chunk reaches the view (monotonic ns) and wakes the first-chunk wait."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[tuple[int, str]] = []
        self.first = asyncio.Event()

    def agent_text(self, text: str) -> None:
        self.arrivals.append((time.monotonic_ns(), text))
        self.first.set()


def scripted(behaviour: str) -> AgentSpec:
    return AgentSpec("Scripted", (sys.executable, AGENT, behaviour))


async def first_chunk(spec: AgentSpec, folder: str, env: dict[str, str], prompts: int) -> list[float]:
    """ms from prompt() to the first chunk at the view, per prompt (the first prompt is dropped)."""
    from companion.acp.session import ChatSession

    view = TimedView()
    session = ChatSession(spec, [folder], HeadlessEditor("reject"), view, env=env)
    times: list[float] = []
    try:
        await session.start()
        for _ in range(prompts + 1):
            view.first.clear()
            started = time.monotonic_ns()
            turn = asyncio.ensure_future(session.prompt("go"))
            await view.first.wait()
            times.append((time.monotonic_ns() - started) / 1e6)
            assert await turn == "end_turn"
    finally:
        await session.close()
    return times[1:]


async def per_update(folder: str, chunks: int, gap_ms: float) -> dict[str, Any]:
    from companion.acp.session import ChatSession

    view = TimedView()
    env = {**os.environ, "SCRIPTED_AGENT_CHUNKS": str(chunks), "SCRIPTED_AGENT_GAP_MS": str(gap_ms)}
    session = ChatSession(scripted("stream"), [folder], HeadlessEditor("reject"), view, env=env)
    try:
        await session.start()
        assert await session.prompt("go") == "end_turn"
    finally:
        await session.close()
    client, writes = [], []
    for arrived, text in view.arrivals:
        _n, sent, previous_write = (int(x) for x in text.rstrip(";").split())
        client.append((arrived - sent) / 1e3)
        if previous_write:
            writes.append(previous_write / 1e3)
    arrivals = [arrived for arrived, _ in view.arrivals]
    span_s = (arrivals[-1] - arrivals[0]) / 1e9
    skip = len(client) // 10  # warm-up
    client, writes = client[skip:], writes[skip:]
    return {
        "client_p50_us": statistics.median(client),
        "client_p99_us": percentile(client, 99),
        "agent_write_p50_us": statistics.median(writes),
        "agent_write_p99_us": percentile(writes, 99),
        "view_updates_per_s": (len(arrivals) - 1) / span_s if span_s else 0.0,
        "n": len(client),
    }


async def memory(folder: str, sessions: int) -> dict[str, float]:
    me = psutil.Process()
    base = one = me.memory_info().rss
    from companion.acp.session import ChatSession  # the SDK loads here, with the first chat

    opened: list[ChatSession] = []
    try:
        for _ in range(sessions + 1):
            session = ChatSession(scripted("reply"), [folder], HeadlessEditor("reject"), RecordingView())
            opened.append(session)
            await session.start()
            if len(opened) == 1:
                one = me.memory_info().rss
        many = me.memory_info().rss
    finally:
        for session in opened:
            await session.close()
    mib = 1024 * 1024
    return {"first_session_mib": (one - base) / mib, "per_session_mib": (many - one) / sessions / mib, "n": sessions}


START = """
import json, sys
sys.path.insert(0, "bench")
import bench_core
result = bench_core.start_time({runs})
start = bench_core.run_start(dict(__import__("os").environ, PYTHONPATH="."), ".")
result["acp_imported"] = "acp" in start["libraries"]
print(json.dumps(result))
"""


def start_up(root: str, runs: int) -> dict[str, Any]:
    """bench_core's start benchmark as `root` has it, run with this interpreter from `root`."""
    out = subprocess.check_output([sys.executable, "-c", START.format(runs=runs)], cwd=root, text=True)
    return json.loads(out.strip().splitlines()[-1])


def start_rows(before: str | None, after: str, runs: int) -> dict[str, Any]:
    """Before and after take turns run by run, so both meet the same load on the shared machine."""
    roots = {"start after": after} if before is None else {"start before": before, "start after": after}
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in roots}
    for _ in range(runs):
        for name, root in roots.items():
            samples[name].append(start_up(root, 1))
    return {
        name: {
            "warm_s": statistics.median(s["warm_s"] for s in runs_of),
            "cold_s": statistics.median(s["cold_s"] for s in runs_of),
            "acp_imported": any(s["acp_imported"] for s in runs_of),
            "runs": len(runs_of),
            "root": roots[name],
        }
        for name, runs_of in samples.items()
    }


def gemini_setup(tmp: str, turns: int) -> tuple[AgentSpec, dict[str, str]]:
    home = make_gemini_home(os.path.join(tmp, "home"))
    responses = os.path.join(tmp, "responses.jsonl")
    with open(responses, "w", encoding="utf-8") as handle:
        handle.write(recorded_turns(*[[{"text": "Hello."}] for _ in range(turns)]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
    env.update({"HOME": home, "GEMINI_CLI_HOME": home, "GEMINI_API_KEY": "fake"})
    command = (node(), PINNED.gemini_js, "--acp", "--fake-responses-non-strict", responses)
    return AgentSpec("Gemini CLI", command), env


async def chat_rows(tmp: str, quick: bool) -> dict[str, Any]:
    prompts, chunks, sessions = (5, 200, 2) if quick else (50, 2000, 20)
    folder = os.path.join(tmp, "ws")
    os.makedirs(folder)
    results: dict[str, Any] = {"memory": await memory(folder, sessions)}  # first: before anything imports the SDK
    scripted_times = await first_chunk(
        scripted("stream"), folder, {**os.environ, "SCRIPTED_AGENT_CHUNKS": "20"}, prompts
    )
    results["first chunk, scripted agent"] = _summary(scripted_times)
    spec, env = gemini_setup(tmp, prompts + 1)
    results["first chunk, Gemini CLI offline"] = _summary(await first_chunk(spec, folder, env, prompts))
    results["per update, paced 2 ms"] = await per_update(folder, chunks, 2.0)
    results["per update, back to back"] = await per_update(folder, chunks, 0.0)
    return results


def _summary(times: list[float]) -> dict[str, float]:
    return {"p50_ms": statistics.median(times), "p99_ms": percentile(times, 99), "n": len(times)}


def table(results: dict[str, Any]) -> str:
    rows = ["| measurement | p50 | p99 | n |", "|---|---|---|---|"]
    for name in ("first chunk, scripted agent", "first chunk, Gemini CLI offline"):
        data = results[name]
        rows.append(
            f"| {name}: prompt() to the view | {data['p50_ms']:.2f} ms | {data['p99_ms']:.2f} ms | {data['n']} |"
        )
    for name in ("per update, paced 2 ms", "per update, back to back"):
        data = results[name]
        client = f"{data['client_p50_us']:.0f} µs | {data['client_p99_us']:.0f} µs | {data['n']}"
        write = f"{data['agent_write_p50_us']:.0f} µs | {data['agent_write_p99_us']:.0f} µs | {data['n']}"
        rows.append(f"| {name}: stamp to the view (client) | {client} |")
        rows.append(f"| {name}: the agent's own write | {write} |")
        rows.append(f"| {name}: updates reaching the view per second | {data['view_updates_per_s']:.0f} | | |")
    data = results["memory"]
    rows.append(f"| RSS: first chat session (SDK imported) | {data['first_session_mib']:.1f} MiB | | 1 |")
    rows.append(f"| RSS: per further idle session | {data['per_session_mib']:.2f} MiB | | {data['n']} |")
    for name in ("start before", "start after"):
        if name in results:
            data = results[name]
            rows.append(
                f"| {name} the ACP work: warm / cold (median) | {data['warm_s']:.3f} s / {data['cold_s']:.3f} s | "
                f"acp imported: {data['acp_imported']} | {data['runs']} |"
            )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    parser.add_argument("--before", help="a worktree of the commit before the ACP work (git worktree add DIR fe8bdb8)")
    parser.add_argument("--after", default=ROOT, help="the checkout to compare (default: this one)")
    args = parser.parse_args()
    runs = 2 if args.quick else 9
    with tempfile.TemporaryDirectory() as tmp:
        results = asyncio.run(chat_rows(tmp, args.quick))
    results.update(start_rows(args.before, args.after, runs))
    if not args.quick:  # a smoke run's numbers are not results
        os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench", "results", "acp.json"), "w") as out:
            json.dump(results, out, indent=2)
    print(table(results))


if __name__ == "__main__":
    main()
