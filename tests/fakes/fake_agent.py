"""A stand-in for `claude` and `codex` that speaks their documented output formats (see
`reos_memory/squirrel/writer/agent_cli.py` for the facts), standard library only.

`main(agent, behaviour, record)`: `good` answers one ADD quoting the episode's first user
message (a valid op list derived from the input, for pipeline checks such as
`tools/eval_memories.py --writer claude-code`); the others misbehave as a real CLI can
(`is_error`, `exit`, `sleep`, `garbage`, `huge`, `bad_ops`, `no_usage`, `old` for a build whose
`--help` lacks the newer options). `record` names a file that gets one JSON line per run with
the argv, the environment, the working directory and stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

CLAUDE_HELP_NEW = (
    "Usage: claude [options] [command] [prompt]\n"
    "  -p, --print  --output-format <format>  --model <model>  --max-turns <n>\n"
    "  --system-prompt <prompt>  --append-system-prompt <prompt>  --tools <tools...>\n"
    "  --allowedTools <tools...>  --disallowedTools <tools...>  --no-session-persistence\n"
    "  --strict-mcp-config  --mcp-config <configs...>  --settings <file-or-json>\n"
)
CLAUDE_HELP_OLD = (
    "Usage: claude [options] [command] [prompt]\n"
    "  -p, --print  --output-format <format>  --model <model>\n"
    "  --append-system-prompt <prompt>  --allowedTools <tools...>  --disallowedTools <tools...>\n"
)
CODEX_HELP_NEW = (
    "Usage: codex exec [OPTIONS] [PROMPT]\n"
    "  --json  --skip-git-repo-check  --ephemeral  -s, --sandbox <MODE>  -m, --model <MODEL>\n"
    "  --color <COLOR>  -o, --output-last-message <FILE>\n"
)
CODEX_HELP_OLD = "Usage: codex exec [OPTIONS] [PROMPT]\n  --json  --skip-git-repo-check  -s, --sandbox <MODE>  -m, --model <MODEL>\n"


def _episode(prompt: str) -> dict:
    """The writer's JSON user message inside the prompt (codex gets the instructions first)."""
    if "</instructions>" in prompt:
        prompt = prompt.split("</instructions>", 1)[1]
    start = prompt.find('{"episode_id"')
    if start < 0:
        return {}
    try:
        return json.loads(prompt[start:])
    except ValueError:
        return {}


def _ops(prompt: str) -> dict:
    ep = _episode(prompt)
    said = next(
        (
            e.get("text") or e.get("summary")
            for e in ep.get("events", [])
            if e.get("role") == "user" and (e.get("text") or e.get("summary"))
        ),
        None,
    )
    if not said:
        return {"ops": []}
    said = " ".join(str(said).split())[:300]
    return {
        "ops": [{"op": "ADD", "kind": "preference", "text": f"The user asked: {said}"}],
        "episode_evidence": {"episode_id": ep.get("episode_id"), "source": "explicit_statement"},
    }


def _claude(behaviour: str, prompt: str) -> int:
    usage = {
        "input_tokens": 12,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 1000,
        "output_tokens": 40,
    }
    base = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1234,
        "num_turns": 1,
        "session_id": "00000000-0000-4000-8000-000000000000",
        "total_cost_usd": 0.0012,
    }
    if behaviour == "is_error":
        print(json.dumps({**base, "is_error": True, "result": "Credit balance is too low"}))
        return 1
    text = json.dumps(_ops(prompt))
    if behaviour == "bad_ops":
        text = json.dumps({"ops": [{"op": "ADD", "kind": "gotcha", "text": "x"}]})
    out = {**base, "result": text}
    if behaviour != "no_usage":
        out["usage"] = usage
    print(json.dumps(out))
    return 0


def _codex(behaviour: str, prompt: str) -> int:
    def emit(ev: dict) -> None:
        print(json.dumps(ev), flush=True)

    emit({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"})
    emit({"type": "turn.started"})
    if behaviour == "is_error":
        emit({"type": "error", "message": "stream disconnected before completion"})
        emit({"type": "turn.failed", "error": {"message": "You've hit your usage limit."}})
        return 1
    emit({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "ok"}})
    text = json.dumps(_ops(prompt))
    if behaviour == "bad_ops":
        text = json.dumps({"ops": [{"op": "ADD", "kind": "gotcha", "text": "x"}]})
    emit(
        {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": text}}
    )
    if behaviour != "no_usage":
        emit(
            {
                "type": "turn.completed",
                "usage": {"input_tokens": 1500, "cached_input_tokens": 1000, "output_tokens": 60},
            }
        )
    return 0


def main(agent: str, behaviour: str = "good", record: str | None = None) -> None:
    args = sys.argv[1:]
    if "--help" in args:
        old = behaviour == "old"
        if agent == "claude-code":
            print(CLAUDE_HELP_OLD if old else CLAUDE_HELP_NEW)
        else:
            print(CODEX_HELP_OLD if old else CODEX_HELP_NEW)
        sys.exit(0)
    prompt = sys.stdin.read()
    if record:
        with open(record, "a", encoding="utf-8") as f:
            f.write(
                json.dumps(
                    {"argv": args, "env": dict(os.environ), "cwd": os.getcwd(), "stdin": prompt}
                )
                + "\n"
            )
    if behaviour == "exit":
        sys.stderr.write("Error: not logged in. Run `claude /login` first.\n")
        sys.exit(2)
    if behaviour == "sleep":
        # a child of its own, as a real CLI has (MCP servers, shells): it must die with it
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        if record:
            with open(record + ".pids", "w") as f:
                f.write(f"{os.getpid()} {child.pid}\n")
        time.sleep(600)
        sys.exit(0)
    if behaviour == "garbage":
        print("Sure! Here are the memories I would keep:\n- run the tests\n- be careful")
        sys.exit(0)
    if behaviour == "huge":
        chunk = "x" * 65536
        while True:
            sys.stdout.write(chunk)
    sys.exit(_claude(behaviour, prompt) if agent == "claude-code" else _codex(behaviour, prompt))
