"""The offline Memory Writer: rules, no model, no key.

It writes only what an episode shows plainly, because junk memories are what users of memory
tools complain about most:

* explicit statements of the user ("always ...", "never ...", "from now on ...", "we use X
  here") become preferences, invariants or guards (tier long_term: the user said so);
* user corrections ("no, use pnpm"; an instruction right after the user rejected a tool call)
  become preferences, invariants or guards;
* failure then success of the same call - when it was a real trap: the call failed at least
  twice, or the fix switched tools (requests -> httpx), or the user was severely frustrated -
  becomes a `pattern` (what failed, the error, what worked); a tool switch also becomes an
  `invariant` keyed `project.<category>`; a severe case (3+ failures or severe frustration)
  also an `emergency` guard with a short TTL.

A single fail-edit-pass loop (ordinary test-driven work) writes nothing, nor do failures of the
agent's own tool rules (Claude Code's `<tool_use_error>`: "read it first", "string not found").
"""

from __future__ import annotations

import os
from typing import Any

from reos_memory.models import Memory
from reos_memory.squirrel import statements
from reos_memory.squirrel.tokens import shorten
from reos_memory.squirrel.writer.schema import EpisodeEvidence, WriterOp, WriterOutput

EDIT_TOOLS = frozenset(
    ["edit", "write", "multiedit", "apply_patch", "notebookedit", "str_replace_editor"]
)
LABELS = {"http_client": "HTTP client", "orm": "ORM", "python_env": "Python environment tool"}
GUARD_TTL_DAYS = 14
PATTERN_TTL_DAYS = 90


def write(
    episode_id: str,
    events: list[dict[str, Any]],
    stats: dict[str, Any],
    existing: list[Memory],
) -> tuple[WriterOutput, dict[int, str]]:
    """Ops for one episode, and the evidence source of each op (by index)."""
    said: list[tuple[WriterOp, str]] = []  # from the user's words, in order
    held = {m.key for m in existing if m.key and m.status != "deprecated"}

    def add(st: statements.Statement, confidence: float) -> None:
        op = WriterOp(
            op="UPDATE" if st.key in held else "ADD",
            scope=st.scope,  # type: ignore[arg-type]
            kind=st.kind,  # type: ignore[arg-type]
            tier="long_term",
            polarity=-1 if st.polarity < 0 else 1,
            key=st.key,
            text=st.text,
            confidence=confidence,
        )
        if any(o.text == op.text for o, _ in said):
            return
        if op.key:  # one op per slot: the user's latest word on it wins
            said[:] = [(o, src) for o, src in said if o.key != op.key]
        said.append((op, st.source))

    last_rejected: dict[str, Any] | None = None
    for e in events:
        if e["kind"] == "tool_result" and e.get("rejected"):
            last_rejected = e
            continue
        if e["role"] != "user" or e["kind"] != "message":
            if e["role"] == "assistant" and e["kind"] == "message":
                continue
            last_rejected = None if e["kind"] == "tool_call" else last_rejected
            continue
        text = e.get("text", "")
        found = statements.explicit_statements(text)
        if e.get("frustration") in ("moderate", "severe"):
            # an outburst ("stop retrying the same thing!!") is about the moment, not a rule,
            # unless it names a tool or a slot
            found = [st for st in found if st.tools or st.key]
        for st in found:
            add(st, 0.9)
        if e.get("correction") or last_rejected is not None:
            rej_tool = last_rejected.get("tool_name") if last_rejected else None
            rej_input = last_rejected.get("command") if last_rejected else None
            for st in statements.corrections(text, rej_tool, rej_input):
                if e.get("frustration") in ("moderate", "severe") and not (st.tools or st.key):
                    continue
                if not any(st.text == f.text for f in found):
                    add(st, 0.8)
        last_rejected = None
    frustration = stats.get("user_frustration", "none")
    ops = [o for o, _ in said]
    sources = {i: src for i, (_, src) in enumerate(said)}
    for op in _failure_then_success(events, frustration, held):
        if op.key and any(o.key == op.key for o in ops):
            continue  # the user said what to use; a guess from a tool switch does not override
        sources[len(ops)] = "failure_then_success"
        ops.append(op)
    main = sources.get(0)
    return (
        WriterOutput(
            ops=ops[:20],
            episode_evidence=EpisodeEvidence(
                episode_id=episode_id,
                source=main,  # type: ignore[arg-type]
                frustration=frustration,
            ),
        ),
        sources,
    )


def _task(events: list[dict[str, Any]]) -> str | None:
    for e in events:
        if e["role"] == "user" and e["kind"] == "message" and e.get("summary"):
            s = " ".join(e["summary"].split()).rstrip(".?!")
            if len(s) <= 3:
                return None
            s = s[:1].lower() + s[1:]
            return s if len(s) <= 90 else s[:89].rstrip() + "…"
    return None


def _failure_then_success(
    events: list[dict[str, Any]], frustration: str, held: set[str]
) -> list[WriterOp]:
    ops: list[WriterOp] = []
    fails: dict[str, list[int]] = {}
    done: set[str] = set()
    for i, e in enumerate(events):
        key = e.get("key")
        if e["kind"] != "tool_result" or not key or e.get("rejected"):
            continue
        if e.get("error"):
            fails.setdefault(key, []).append(i)
            continue
        if key not in fails or key in done:
            continue
        done.add(key)
        failed_at = fails[key]
        if all(_harness_error(events[j]) for j in failed_at):
            continue  # the agent's own tool rules ("read it first"): nothing about the project
        last = events[failed_at[-1]]
        between = events[failed_at[-1] + 1 : i]
        fix = _fix(between)
        text_before = " ".join(
            str(events[j].get(f) or "")
            for j in failed_at
            for f in ("command", "error_line", "raw_snippet")
        )
        # what changed: the edits and commands in between and the call that worked (not the
        # lookups, messages or subagent prompts, which may name the failing tool)
        text_after = " ".join(
            str(x.get(f) or "")
            for x in [*between, e]
            if x is e or _changes(x)
            for f in ("summary", "command", "raw_snippet")
        )
        switch = statements.switch_in(" ".join(x.get("summary") or "" for x in between))
        if switch is None:
            switch = statements.switch_between(text_before, text_after)
        n = len(failed_at)
        severe = frustration == "severe" or n >= 3
        if n < 2 and switch is None and frustration != "severe":
            continue  # an ordinary fail-edit-pass loop: nothing worth remembering
        cmd = last.get("command") or last.get("tool_name") or "the call"
        error = last.get("error_line") or last.get("summary") or "an error"
        task = _task(events)
        what = fix or f"`{shorten(e.get('command') or cmd, 100)}` then worked"
        times = "once" if n == 1 else f"{n} times"
        lead = f'In the task "{task}": ' if task else ""
        if switch is not None:
            category, old, new = switch
            label = LABELS.get(category, category.replace("_", " "))
            ops.append(
                WriterOp(
                    op="UPDATE" if f"project.{category}" in held else "ADD",
                    kind="invariant",
                    tier="short_term",
                    key=f"project.{category}",
                    text=f"Use {new} as the {label} in this project; {old} failed here"
                    f" ({shorten(error, 120)}).",
                    confidence=0.75,
                )
            )
            what = f"switching from {old} to {new} fixed it"
        ops.append(
            WriterOp(
                op="ADD",
                kind="pattern",
                tier="short_term",
                text=f"{lead}`{shorten(cmd, 100)}` failed {times} with {shorten(error, 160)}; {what}.",
                ttl_days=PATTERN_TTL_DAYS,
                confidence=0.7,
            )
        )
        if severe:
            if switch is not None:
                instead = f"switch to {switch[2]} instead"
            else:
                instead = fix or "change the approach instead"
            ops.append(
                WriterOp(
                    op="ADD",
                    kind="guard",
                    tier="emergency",
                    polarity=-1,
                    text=f"Do not keep retrying `{shorten(cmd, 100)}` after {shorten(error, 120)};"
                    f" {instead}.",
                    ttl_days=GUARD_TTL_DAYS,
                    confidence=0.7,
                )
            )
    return ops


def _harness_error(e: dict[str, Any]) -> bool:
    """An error of the agent's tool harness rather than of the work: Claude Code wraps those
    in <tool_use_error> ("File has not been read yet", "String to replace not found")."""
    return (e.get("raw_snippet") or "").lstrip().startswith("<tool_use_error>")


def _changes(x: dict[str, Any]) -> bool:
    """An event that changes something: an edit or a command (its call or its result)."""
    if x["kind"] not in ("tool_call", "tool_result"):
        return False
    tool = (x.get("tool_name") or "").lower()
    return tool in EDIT_TOOLS or bool(x.get("command")) or bool(x.get("file") and not tool)


def _fix(between: list[dict[str, Any]]) -> str | None:
    """What changed between the last failure and the success, in a few words."""
    steps: list[tuple[str, bool]] = []  # (what, whether it changed something)
    for x in between:
        if x["kind"] != "tool_call":
            continue
        name = x.get("tool_name") or ""
        file = x.get("file") or ""
        changed = name.lower() in EDIT_TOOLS
        what = x.get("summary")
        bare = bool(file) and what in (None, file)
        # besides edits, files read ("Edit" fails until the file was read): not searches
        if not changed and not (bare and not x.get("command")):
            continue
        if bare:  # a bare path says less than "Read app.py"
            what = f"{name or 'edited'} {os.path.basename(file.rstrip('/')) or file}"
        if what and all(what != w for w, _ in steps):
            steps.append((what, changed))
    if len(steps) > 3:  # the edits matter more than the files read on the way
        steps = [s for s in steps if s[1]][:3] or steps
    if not steps:
        return None
    return "what worked: " + "; ".join(shorten(w, 100) for w, _ in steps[:3])
