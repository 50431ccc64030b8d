"""What the offline writer keeps from invented talk (`harness/invented_talk/`).

    python tools/eval_invented.py [--show]

Each user turn or reply is said in a small session of its own, after the agent finished a first
piece of work, and answered by the agent; each agent sentence is said after a failing test and
before the fix. The episode goes through the product's own compression and the offline writer,
in process (no server, no model weights needed beyond what ingest loads). Printed per file:

* user turns and replies: memories that hold one of the turn's rules (a memory holds a rule when
  half the content words of the shorter one are in the other), memories that hold none (no
  rule: work asked for now, a report, a reaction), and rules no memory holds;
* agent sentences: findings written, and other sentences written (narration, status, fragments).

`--show` prints every memory that holds no rule and every rule missed, for finding what the rules
of `squirrel/text` misread. The development set (`tools/eval_memories.py`) stays the measure of
record; these files are invented, so a form of speech can be looked at without reading it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reos_memory.models import EventIn  # noqa: E402
from reos_memory.squirrel.ingest.episodes import compress_episode  # noqa: E402
from reos_memory.squirrel.text.junk import content  # noqa: E402
from reos_memory.squirrel.writer import offline  # noqa: E402

TALK = ROOT / "harness" / "invented_talk"
SAME_RULE = 0.5  # share of the shorter text's content words the other holds


class _Session:
    """Events of one invented session, with increasing times and tool call ids."""

    def __init__(self) -> None:
        self.events: list[EventIn] = []

    def add(self, role: str, kind: str, **fields: Any) -> None:
        n = len(self.events)
        ts = f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z"
        self.events.append(EventIn(role=role, kind=kind, ts=ts, **fields))  # type: ignore[arg-type]

    def call(self, tool: str, result: str, *, error: bool = False, **fields: Any) -> None:
        call_id = f"toolu_{len(self.events):024d}"
        self.add("assistant", "tool_call", tool_name=tool, call_id=call_id, **fields)
        self.add(
            "tool",
            "tool_result",
            tool_name=tool,
            call_id=call_id,
            text=result,
            is_error=error,
            exit_code=1 if error else 0,
        )

    def written(self) -> list[str]:
        events, stats = compress_episode(self.events, "2026-01-01T00:00:00Z")
        out = offline.write("invented", events, msgspec.structs.asdict(stats), [])
        return [
            op.text or ""
            for i, op in enumerate(out.output.ops)
            if out.sources.get(i) != "project_command"
        ]


def user_says(text: str) -> list[str]:
    s = _Session()
    s.add("user", "message", text="Add a --json flag to the status command and keep the table.")
    s.add("assistant", "message", text="I'll add the flag to the status command.")
    s.call("Edit", "ok", file="/repo/cmd/status.go", text="+ flag")
    s.add("assistant", "message", text="Done: the status command now takes --json.")
    s.add("user", "message", text=text)
    s.add("assistant", "message", text="Understood, I'll do that now.")
    s.call("Edit", "ok", file="/repo/cmd/status_test.go", text="+ test")
    s.add("assistant", "message", text="Done.")
    return s.written()


def agent_says(text: str) -> list[str]:
    s = _Session()
    s.add("user", "message", text="The status command crashes outside a git repository, fix it.")
    s.call("Bash", "--- FAIL: TestStatus (0.00s)\npanic: nil map", error=True, command="go test")
    s.add("assistant", "message", text=text)
    s.call("Edit", "ok", file="/repo/cmd/status.go", text="+ fix")
    s.call("Bash", "ok  \tgithub.com/acme/cli/cmd\t0.2s", command="go test")
    s.add("assistant", "message", text="All tests pass now.")
    return s.written()


def _holds(memory: str, rule: str) -> bool:
    mine, theirs = content(memory), content(rule)
    return bool(mine and theirs) and len(mine & theirs) / min(len(mine), len(theirs)) >= SAME_RULE


def users(path: Path, show: bool) -> dict[str, int]:
    kept = other = missed = rules = 0
    for line in path.read_text().splitlines():
        case = json.loads(line)
        written = user_says(case["text"])
        rules += len(case["rules"])
        for m in written:
            if any(_holds(m, r) for r in case["rules"]):
                kept += 1
            else:
                other += 1
                if show:
                    print(f"  NO RULE  {case['text'][:160]}\n           -> {m[:160]}")
        for r in case["rules"]:
            if not any(_holds(m, r) for m in written):
                missed += 1
                if show:
                    print(f"  MISSED   {r[:160]}")
    return {
        "rules": rules,
        "memories holding a rule": kept,
        "memories holding none": other,
        "rules missed": missed,
    }


def agents(path: Path, show: bool) -> dict[str, int]:
    counts = {"findings": 0, "findings written": 0, "others": 0, "others written": 0}
    for line in path.read_text().splitlines():
        case = json.loads(line)
        written = agent_says(case["text"])
        kind = "findings" if case["finding"] else "others"
        counts[kind] += 1
        counts[f"{kind} written"] += bool(written)
        if show and bool(written) != case["finding"]:
            print(f"  {'MISSED' if case['finding'] else 'WRITTEN'}  {case['text'][:160]}")
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--show", action="store_true", help="print each miss and each memory that holds no rule"
    )
    args = ap.parse_args()
    for name in ("user_turns", "user_replies"):
        print(f"{name}:")
        print("  " + json.dumps(users(TALK / f"{name}.jsonl", args.show)))
    print("agent_sentences:")
    print("  " + json.dumps(agents(TALK / "agent_sentences.jsonl", args.show)))


if __name__ == "__main__":
    main()
