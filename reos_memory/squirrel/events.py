"""One session event in, one compressed event out: injected context stripped first, secrets
redacted, snippets capped, and the signals the episode needs (errors, test outcomes,
frustration, corrections) read off once."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from reos_memory.models import EventIn, now_iso, parse_iso
from reos_memory.squirrel.redaction import redact
from reos_memory.squirrel.text import (
    diagnosis,
    error_output,
    frustration,
    lesson_scorer,
    replies,
    runner_output,
    shell_commands,
    success,
    summaries,
)
from reos_memory.squirrel.text.prose import typed_quotes
from reos_memory.squirrel.token_count import cap

# Squirrel's own injection (markers.CONTEXT_OPEN ... CONTEXT_CLOSE), also a truncated one
_INJECTED = re.compile(r"<squirrel-context\b[^>]*>.*?(?:</squirrel-context>|\Z)", re.DOTALL)
_INJECTED_ESCAPED = re.compile(  # the same block inside a JSON string of a log line
    r"\\u003csquirrel-context\b.*?(?:\\u003c/squirrel-context\\u003e|\Z)", re.DOTALL
)

SUMMARY_CHARS = 240
SNIPPET_CHARS = 400
COMMAND_CHARS = 300
USER_TEXT_CHARS = 1500
_EXCEPTION = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Warning|Failure))\s*:\s*(.*)$")
REJECTION_MARKERS = (
    "doesn't want to proceed with this tool use",
    "tool use was rejected",
    "user rejected",
    "request interrupted by user",
)


def strip_injected(text: str) -> str:
    """The text without any Squirrel context block (also a truncated one at the end)."""
    if "squirrel-context" not in text:
        return text
    return _INJECTED_ESCAPED.sub("", _INJECTED.sub("", text))


Redactor = Callable[[str], str]


def _clean(text: str | None, red: Redactor) -> str | None:
    if text is None:
        return None
    return red(strip_injected(text))


# Long text is redacted only as far as anything of it can be stored: its head and its tail (the
# stored snippet, summary and user text all come from there). What is read only to judge it -
# errors, test verdicts - is the whole text, never stored; an error line taken from it is
# redacted as a whole line before it is kept.
REDACT_WINDOW = 3000


def _window(text: str | None, red: Redactor) -> str | None:
    """The head and tail of a long text (injections already stripped), redacted."""
    if text is None:
        return None
    if len(text) > REDACT_WINDOW:
        half = REDACT_WINDOW // 2
        text = text[:half] + "\n…\n" + text[-half:]
    return red(text)


def _head_tail(text: str, n: int) -> str:
    """Long output keeps its start and its end, where errors and summaries are."""
    if len(text) <= n:
        return text
    head = n // 3
    return text[:head].rstrip() + " … " + text[-(n - head - 3) :].lstrip()


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def parse_ts(ts: str | None, index: int, now: str | None = None) -> str:
    """An event time as UTC ISO 8601 (`now` when absent); an unreadable one is a clear error."""
    if ts is None:
        return now or now_iso()
    return parse_iso(ts, f"events[{index}].ts")


def main_text(ev: EventIn) -> str | None:
    """The text of an event that a following event may continue (a key split over two)."""
    return ev.text if ev.text is not None else ev.raw_snippet or ev.command


def compress(
    ev: EventIn,
    index: int,
    call: dict[str, Any] | None,
    now: str | None = None,
    red: Redactor = redact,
) -> dict[str, Any]:
    """The stored form of one event. `call` is the tool call a result answers, if known; `now`
    stands in for a missing `ts`; `red` redacts (the session's scope: values seen elsewhere)."""
    raw_text = None if ev.text is None else strip_injected(ev.text)  # never stored
    if raw_text is not None and ev.kind == "message":
        raw_text = typed_quotes(raw_text)  # (what people write, as every reading expects it)
    raw_snippet = None if ev.raw_snippet is None else strip_injected(ev.raw_snippet)
    text = _window(raw_text, red)
    snippet = _window(raw_snippet, red)
    summary = _clean(ev.summary, red)
    command = _clean(ev.command, red)
    if command is None and call is not None:
        command = call.get("command")
    out = _common_fields(ev, index, call, now, red, command)
    if ev.origin == "compaction":
        _add_compaction(out, summary, raw_text, red)
        return out
    if ev.role == "user" and ev.kind == "message":
        _add_user_message(out, ev, text, summary, snippet)
    elif ev.kind == "tool_result":
        body = text if text is not None else (snippet or "")
        raw_body = raw_text if raw_text is not None else (raw_snippet or "")
        _add_tool_result(out, ev, command, summary, body, raw_body, red)
    else:
        _add_other(out, ev, text, raw_text, snippet, summary, command, red)
    said = lesson_text(ev)
    if said is not None:
        # the sentences that read most like a lesson, the whole text read (`text.lesson_scorer`)
        scored = [[red(s), p] for s, p in lesson_scorer.best(*said)]
        if scored:
            out["key_sentences"] = scored
    if ev.kind in ("tool_call", "tool_result"):
        out["key"] = call_key(out.get("tool_name"), out.get("command"), out.get("file"))
    return out


def lesson_text(ev: EventIn) -> tuple[str, str, str | None] | None:
    """What the lesson model reads of an event, as (text, role, origin): a message of the user or
    the agent (not a compaction summary: its errors-and-fixes are read as notes); None otherwise."""
    if ev.kind != "message" or ev.role not in ("user", "assistant") or not ev.text:
        return None
    if ev.origin == "compaction":
        return None
    return strip_injected(ev.text), ev.role, ev.origin


def _common_fields(
    ev: EventIn,
    index: int,
    call: dict[str, Any] | None,
    now: str | None,
    red: Redactor,
    command: str | None,
) -> dict[str, Any]:
    """The fields every stored event has (time, who, which tool and file), then the optional
    command, call id, exit code and origin."""
    out: dict[str, Any] = {
        "ts": parse_ts(ev.ts, index, now),
        "role": ev.role,
        "kind": ev.kind,
        "tool_name": red(ev.tool_name) if ev.tool_name else (call or {}).get("tool_name"),
        "file": cap(red(ev.file), 300) if ev.file else (call or {}).get("file"),
    }
    if command:
        out["command"] = cap(command.strip(), COMMAND_CHARS)
    if ev.call_id:
        out["call_id"] = call_ref(ev.call_id, red)
    if ev.exit_code is not None:
        out["exit_code"] = ev.exit_code
    if ev.origin is not None:
        out["origin"] = ev.origin
    return out


def _add_compaction(
    out: dict[str, Any], summary: str | None, raw_text: str | None, red: Redactor
) -> None:
    """The agent's own summary: only its errors-and-fixes entries are kept, as notes."""
    out["summary"] = cap(summary or "compaction summary", SUMMARY_CHARS)
    notes = [red(n) for n in summaries.find(raw_text or "")]
    if notes:
        out["notes"] = notes


def _add_user_message(
    out: dict[str, Any], ev: EventIn, text: str | None, summary: str | None, snippet: str | None
) -> None:
    """What the user said, and the cues read from it: frustration, a correction, a success."""
    said = (text if text is not None else summary or snippet or "").strip()
    out["text"] = cap(said, USER_TEXT_CHARS)
    out["summary"] = cap(summary or _first_line(said), SUMMARY_CHARS)
    level = frustration.frustration(said)
    if level != "none":
        out["frustration"] = level
    if replies.is_correction(said) or ev.origin == "rejection":
        out["correction"] = True
    if success.success_cue(said):
        out["success"] = True
    # a cause or a constraint in the user's words: a pasted report, a review comment, a finding
    # ("The tests failed because the environment has commit.gpgsign=true"); the writer keeps it
    # when the agent acted on it
    notes = diagnosis.find_in_users_words(said)
    if notes:
        out["notes"] = notes


def _add_tool_result(
    out: dict[str, Any],
    ev: EventIn,
    command: str | None,
    summary: str | None,
    body: str,
    raw_body: str,
    red: Redactor,
) -> None:
    """A tool's output: whether it was rejected, failed or ran tests, its error line, a snippet."""
    low = raw_body[:2000].lower()
    rejected = ev.rejected or any(m in low for m in REJECTION_MARKERS)
    error = bool(ev.is_error) or (ev.exit_code not in (None, 0)) or rejected
    if ev.is_error is None and ev.exit_code is None and not rejected:
        error = error_output.looks_like_error(raw_body)
    test = _test_outcome(command, raw_body, ev.exit_code)
    if test is not None:
        out["test"] = test
        error = error or test == "failed"
    if rejected:
        out["rejected"] = True
    if error:
        out["error"] = True
        line = error_output.error_line(raw_body) if raw_body else None
        if line:
            out["error_line"] = cap(brief_error(_safe_line(raw_body, line, red)), SUMMARY_CHARS)
    out["summary"] = cap(
        summary or out.get("error_line") or _first_line(body) or "(no output)", SUMMARY_CHARS
    )
    if body:
        out["raw_snippet"] = _head_tail(body.strip(), SNIPPET_CHARS)


def _test_outcome(command: str | None, raw_body: str, exit_code: int | None) -> str | None:
    """ "passed"/"failed" when the output is a test run's (read from it, else from a test
    command's exit code), None otherwise."""
    test = runner_output.test_outcome(command, raw_body, exit_code) if raw_body or command else None
    if (
        test is None
        and command
        and shell_commands.is_test_command(command)
        and exit_code is not None
    ):
        test = "passed" if exit_code == 0 else "failed"
    return test


def _add_other(
    out: dict[str, Any],
    ev: EventIn,
    text: str | None,
    raw_text: str | None,
    snippet: str | None,
    summary: str | None,
    command: str | None,
    red: Redactor,
) -> None:
    """A tool call or an assistant message: a summary, a snippet, and what the agent found out."""
    if ev.kind == "tool_call" and (ev.is_error or ev.exit_code not in (None, 0)):
        out["error"] = True
    said = summary or _first_line(text or "") or command or out["file"] or out["tool_name"] or ""
    out["summary"] = cap(said, SUMMARY_CHARS)
    if ev.kind == "tool_call":
        detail = snippet if snippet is not None else text
        if detail:
            out["raw_snippet"] = _head_tail(detail.strip(), SNIPPET_CHARS)
    elif text and len(text) > SUMMARY_CHARS:
        out["raw_snippet"] = _head_tail(text.strip(), SNIPPET_CHARS)
    if ev.role == "assistant" and ev.kind == "message" and raw_text:
        # what the agent found out, read from its whole message (the rest is not kept)
        notes = [red(n) for n in diagnosis.find(raw_text)]
        if notes:
            out["notes"] = notes
        if diagnosis.retracts(raw_text):
            out["retracts"] = True


# the ids agents give their tool calls (Claude Code `toolu_…`, Codex `call_…`): never a secret,
# unique per call, so the redaction rules would read each one in full for nothing
_CALL_ID = re.compile(r"(?:toolu|call|fc|tool)_[A-Za-z0-9]{8,64}")


def call_ref(call_id: str, red: Redactor = redact) -> str:
    """A tool call's id as stored: an agent's own id as it is, anything else redacted."""
    return call_id if _CALL_ID.fullmatch(call_id) else red(call_id)[:80]


def _safe_line(body: str, line: str, red: Redactor = redact) -> str:
    """An error line fit to store. Redaction reads the whole output line it came from (a secret
    cut off by the cap must still be recognised); the line as read is kept when it was not cut
    and its whole line holds no secret (so "<tool_use_error>x</tool_use_error>" stays "x")."""
    full = _full_line(body, line)
    safe = red(full)
    if safe == full and not line.endswith("…") and red(line) == line:
        return line
    return safe


def _full_line(body: str, line: str) -> str:
    """The whole output line a (possibly capped) error line came from."""
    head = line.rstrip("…").strip()[:60]
    at = body.rfind(head) if head else -1
    if at < 0:
        return line
    end = body.find("\n", at)
    return body[at : end if end >= 0 else len(body)]


def _unwrapped(detail: str) -> str:
    """An exception's message without the brackets and quotes that close around it, keeping
    a quote that closes one inside it (`No module named 'app'`)."""
    detail = detail.rstrip(" )")
    while detail[-1:] in ("'", '"') and detail.count(detail[-1]) % 2 == 1:
        detail = detail[:-1].rstrip(" )")
    return detail


def brief_error(line: str) -> str:
    """An error line cut to what a reader needs: the exception and its innermost reason."""
    line = " ".join(line.split())
    m = _EXCEPTION.match(line)
    if not m:
        return cap(line, 160)
    exc, detail = m.group(1), _unwrapped(m.group(2))
    if "] " in detail:  # e.g. "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"
        detail = _unwrapped(detail.rsplit("] ", 1)[1])
    elif len(detail) > 80:
        detail = "…" + detail[-79:].lstrip()
    return f"{exc}: {detail}" if detail else exc


def call_key(tool: str | None, command: str | None, file: str | None) -> str:
    """What makes two tool calls 'the same call' for retry detection."""
    if command:
        return f"{tool or 'shell'}:{shell_commands.normalize_command(command)}"
    return f"{tool or 'tool'}:{file or ''}"
