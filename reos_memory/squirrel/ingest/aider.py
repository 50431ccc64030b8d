"""Aider chat histories (`.aider.chat.history.md`, in the project's git root), read line by line.

Field notes: ../shared/formats/aider/NOTES.md (aider's `io.py` writes the file: `append_chat_history`,
`user_input`, `ai_output`, `tool_output`, `confirm_ask`). There are no records, only lines:

* `# aider chat started at YYYY-MM-DD HH:MM:SS` starts a run of aider: a session of its own (the
  previous one is over). Its id comes from the file and the header's time; every event of the
  run carries that time (local, no zone: the only time the file holds).
* `#### ` lines are what the user typed, each ending in two spaces (a Markdown hard break; an
  LLM's own `#### heading` has none); consecutive ones are one multi-line input. Slash commands:
  `/run CMD`, `!CMD`, `/test CMD` and `/git ARGS` become a tool call whose result is the output
  aider printed after it; `/undo` is the user taking back aider's last edit (a rejected result);
  `/ask Q`, `/code Q`, `/architect Q` are requests; the others change aider's state and say
  nothing to learn from. A `# Fix any errors below, if possible.` input is aider sending the
  linter's complaints to the model, not the user: a failed `lint` call.
* `> ` starts aider's own output, one message per `tool_output`/`confirm_ask` call: stripped,
  ending in two spaces. A message of several lines (a command's output) carries `> ` on its first
  line only, so the lines up to the one ending in two spaces are its own, whatever they look like.
  `Applied edit to F` is an edit (its new text from the SEARCH/REPLACE block of the reply before),
  `# N SEARCH/REPLACE blocks failed to match!` a failed one, `Running CMD` / `Command 'CMD' exited
  with status N` a shell command the model proposed, a question answered `n` to running one (or
  to creating or editing a file) a rejection, free text answering "Add the output to the chat?" the
  user's words, `^C` an interrupt, `Unexpected error:` and `litellm.…Error` the model's API
  failing. Banners, token counts and commits are aider's bookkeeping.
* Anything else is the model's reply, written whole once streaming ended.

Aider never logs an exit status for `/run` and `/test`: the test verdict is read downstream from
the output's summary line (`3 failed, 1 passed`), with the command typed as the call's command.

A block's end is known only when the next one starts, so the current block waits in the parse
state (`extra`) and the last one of a run is handed on by `finish` when the session ends. A line
is read only once it ends in a newline (aider writes whole lines; a last line without one is
still being written and is read next time).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from reos_memory.models import EventIn
from reos_memory.squirrel.ingest import reader
from reos_memory.squirrel.ingest.base import (
    MAX_TEXT,
    Adapter,
    Parsed,
    ParseState,
    Place,
    Record,
    call_event,
    cut,
    first_line,
    result_event,
    system_event,
)

LOG_NAME = ".aider.chat.history.md"
_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_HEADER_BYTES = re.compile(rb"^# aider chat started at \d{4}-\d\d-\d\d", re.M)
_ENDED = re.compile(r"\S  $")  # the last line of a message: stripped text, then two spaces
_SEARCH = re.compile(r"^<{5,9} SEARCH\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^>{5,9} REPLACE\s*$")
_FENCE = ("```", "<source")
_APPLIED = re.compile(r"^Applied edit to (.+)$")
_NO_MATCH = re.compile(r"^# \d+ SEARCH/REPLACE blocks? failed to match")
_NO_MATCH_FILE = re.compile(r"failed to exactly match lines in (\S+)")
_COMMIT = re.compile(r"^Commit [0-9a-f]{7,40}\b")
_RUNNING = re.compile(r"^Running (.+)$")
_EXITED = re.compile(r"^Command '(.+)' exited with status (-?\d+)")
_API_ERROR = re.compile(
    r"^(?:Unexpected error:|litellm\.\w+|\w*(?:API|RateLimit|ServiceUnavailable|InternalServer|"
    r"Authentication|BadRequest|APIConnection)Error\b)"
)
_INTERRUPT = ("^C again to exit", "^C KeyboardInterrupt")
_ADD_OUTPUT = ("Add the output to the chat", "Add command output to the chat")
_LINT = "# Fix any errors below, if possible."
_LINT_CMD = re.compile(r"^## Running: (.+)$", re.M)
_OPTIONS = re.compile(r"^\s*(?:\[[^\]]*\]|\(y/n[^)]*\)|\([A-Z]\)\w*(?:/\([A-Z]\)[\w' ]*)*|:)", re.I)
_YES = frozenset({"y", "yes", "a", "all"})
_NO = frozenset({"n", "no", "d", "don't", "never", "s", "skip"})
# aider's commands (a command may be typed as any unique prefix of its name: `/ex`)
_COMMANDS = (
    "add", "architect", "ask", "chat-mode", "clear", "code", "commit", "copy", "copy-context",
    "diff", "drop", "edit", "editor", "editor-model", "exit", "git", "help", "lint", "load", "ls",
    "map", "map-refresh", "model", "models", "multiline-mode", "paste", "quit", "read-only",
    "reasoning-effort", "report", "reset", "run", "save", "settings", "test", "think-tokens",
    "tokens", "undo", "voice", "weak-model", "web",
)  # fmt: skip
_RUNS = frozenset({"run", "test", "git"})
_ASKS = frozenset({"ask", "code", "architect"})
_BUFFER = 3 * MAX_TEXT  # a block kept longer than this keeps its head and tail


class Aider(Adapter):
    name = "aider"

    def roots(self, place: Place) -> list[str]:
        # aider keeps no central store: the history lies in each project's git root (NOTES
        # "Where the files live"); only a history file named in the environment is known
        named = place.var("AIDER_CHAT_HISTORY_FILE")
        return [named] if named and os.path.isabs(named) else []

    def in_project(self, root: str) -> list[str]:
        return [os.path.join(root, LOG_NAME)]

    def claims(self, path: str) -> bool:
        name = os.path.basename(path)
        if name.endswith(LOG_NAME):
            return True
        if not (name.endswith(".md") and "aider" in name.lower()):
            return False
        try:  # another name (`--chat-history-file`): a run's header near its start
            with open(path, "rb") as f:
                return _HEADER_BYTES.search(f.read(4096)) is not None
        except OSError:
            return False

    def records(self, path: str, position: int, max_bytes: int) -> Iterator[Record]:
        start = position
        for line in reader.lines(path, position, max_bytes):
            if line.data is None:
                yield Record(line.end, None, True)  # a line of many MB: not aider's
            elif line.end - start == len(line.data):
                return  # the last line, still being written: read once it ends
            else:
                text = line.data.decode("utf-8", "replace").rstrip("\r")
                yield Record(line.end, {"line": text})
            start = line.end

    def begin(self, path: str, state: ParseState) -> None:
        real = os.path.realpath(path)
        state.cwd = os.path.dirname(real)  # the history lies in the project's root
        state.extra["key"] = hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:10]

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        line = record.get("line")
        if not isinstance(line, str):
            state.count("skipped")
            return []
        x = state.extra
        head = _HEADER.match(line)
        if head:
            return self._start(head.group(1), state)
        if state.session_id is None:
            state.count("lines_before_first_run")  # the tail of a run whose header is gone
            return []
        if x.get("open") is not None and not _user_line(line):
            # a line of an aider message that started on an earlier `> ` line
            x["open"].append(line)
            if _ENDED.search(line):
                msg = "\n".join(x.pop("open"))
                return self._wrap(self._message(msg[:-2], state), state)
            if sum(len(s) + 1 for s in x["open"]) > 2 * MAX_TEXT:
                # stored with the cursor every batch: its head and tail are kept, as `cut` would
                state.count("open_message_cut")
                x["open"] = [cut("\n".join(x["open"]))]
            return []
        if _user_line(line):
            out = self._close_open(state)
            if x.get("blk") != "user":
                out += self._flush(state) + self._close_run(state)
                x["blk"], x["lines"], x["size"] = "user", [], 0
            _keep(x, line[5:-2])
            return self._wrap(out, state)
        if line.startswith(">") and (len(line) == 1 or line[1] == " "):
            out = self._flush(state) if x.get("blk") in ("user", "ai") else []
            x["blk"] = "tool"
            body = line[2:]
            if not body.strip():
                return self._wrap(out, state)  # an empty message (a blank line of output)
            if _ENDED.search(body):
                return self._wrap(out + self._message(body[:-2], state), state)
            x["open"] = [body]  # a message of several lines: up to the one ending in two spaces
            return self._wrap(out, state)
        # the model's reply
        out = []
        if x.get("blk") != "ai":
            if not line.strip():
                # the blank line aider writes before an input and a reply: what the user typed
                # before it is whole (the lines of one input follow each other)
                return self._wrap(self._flush(state), state) if x.get("blk") == "user" else []
            out = self._flush(state) + self._close_run(state)
            x["blk"], x["lines"], x["size"] = "ai", [], 0
            x["edits"], x["sr"] = {}, {"mode": "", "prev": []}
        self._reply_line(line, state)
        return self._wrap(out, state)

    def finish(self, state: ParseState) -> list[Parsed]:
        out = self._close_open(state) + self._flush(state) + self._close_run(state)
        state.extra["blk"] = None
        return self._wrap(out, state)

    # -- runs ------------------------------------------------------------------------------

    def _start(self, stamp: str, state: ParseState) -> list[Parsed]:
        """A new run of aider: the previous run's last block is handed on and that run is over."""
        out = self.finish(state)
        x = state.extra
        old = state.session_id
        if old is not None and x.get("has"):
            state.finished.append(old)
        base = f"aider-{x.get('key') or 'log'}-{re.sub(r'[^0-9]', '', stamp)}"
        # two runs started in the same second (two terminals): the second gets a number
        x["n"] = int(x.get("n") or 1) + 1 if base == x.get("base") else 1
        x["base"] = base
        sid = base if x["n"] == 1 else f"{base}-{x['n']}"
        for k in ("has", "run", "shown", "files", "edits", "int", "lines", "size", "sr", "ok"):
            x.pop(k, None)
        x["blk"] = None
        state.session_id = sid
        x["ts"] = _iso(stamp)
        state.count("sessions")
        return out

    def _wrap(self, events: list[EventIn], state: ParseState) -> list[Parsed]:
        """Events of the current run."""
        if not events:
            return []
        sid = state.session_id
        if sid is None:
            return []
        state.extra["has"] = True
        return [Parsed(sid, e) for e in events]

    # -- blocks ----------------------------------------------------------------------------

    def _close_open(self, state: ParseState) -> list[EventIn]:
        """A message whose closing line never came (a run cut off): read as it stands."""
        lines = state.extra.pop("open", None)
        return self._message("\n".join(lines).rstrip(), state) if lines else []

    def _flush(self, state: ParseState) -> list[EventIn]:
        """The block being read (what the user typed, the model's reply) as events."""
        x = state.extra
        blk = x.get("blk")
        lines = x.get("lines") or []
        x["lines"], x["size"], x["blk"] = [], 0, None
        if blk == "user":
            return self._typed("\n".join(lines), state)
        if blk == "ai":
            text = "\n".join(lines).strip()
            if not text:
                return []
            state.count("assistant_messages")
            return [EventIn(role="assistant", kind="message", ts=x.get("ts"), text=cut(text))]
        return []

    def _reply_line(self, line: str, state: ParseState) -> None:
        """One line of the model's reply; SEARCH/REPLACE blocks are kept aside as edits."""
        x = state.extra
        sr = x["sr"]
        mode = sr["mode"]
        if mode == "":
            if _SEARCH.match(line):
                prev = sr["prev"]
                name = prev[-1] if prev and not prev[-1].startswith(_FENCE) else ""
                if not name and len(prev) > 1:
                    name = prev[-2]
                sr["mode"], sr["file"], sr["new"] = "search", name.strip().strip("`*:"), []
                return
            if line.strip():
                sr["prev"] = [*sr["prev"][-1:], line.strip()]
            _keep(x, line)
        elif mode == "search":
            if _DIVIDER.match(line):
                sr["mode"] = "replace"
        elif _REPLACE.match(line):
            edits = x.setdefault("edits", {})
            new = "\n".join(sr["new"])
            f = sr.get("file") or ""
            edits[f] = (edits.get(f, "") + "\n" + new).strip("\n")[:2000]
            sr["mode"], sr["new"] = "", []
            _keep(x, f"[edit of {f}]" if f else "[edit]")
        elif sum(len(s) for s in sr["new"]) < 2000:
            sr["new"].append(line)

    def _typed(self, text: str, state: ParseState) -> list[EventIn]:
        """One input of the user: a request, a command of aider, or aider's lint message."""
        x = state.extra
        ts = x.get("ts")
        state.count("user_inputs")
        if not text.strip() or text.strip() == "<blank>":
            return []
        if text.startswith(_LINT):
            # aider hands the linter's complaints to the model in the user's name
            state.count("lint_failures")
            m = _LINT_CMD.search(text)
            cmd = m.group(1).strip() if m else None
            body = text[m.end() :].strip() if m else text[len(_LINT) :].strip()
            return [
                call_event(state, ts, "lint", None, command=cmd, summary="aider's lint check"),
                result_event(state, ts, "lint", None, body, is_error=True, command=cmd),
            ]
        first, _, rest = text.partition("\n")
        stripped = first.strip()
        if stripped.startswith("!") or (stripped.startswith("/") and len(stripped) > 1):
            state.count("slash_commands")
            if stripped.startswith("!"):
                name, args = "run", (stripped[1:] + ("\n" + rest if rest else "")).strip()
            else:
                word, _, args = stripped[1:].partition(" ")
                name = _command(word)
                args = (args + ("\n" + rest if rest else "")).strip()
            state.count(f"command:{name}")
            return self._command(name, args, state)
        if x.pop("asked", None) == text.strip():
            state.count("ask_echoes")
            return []
        state.count("prompts")
        return [EventIn(role="user", kind="message", ts=ts, text=cut(text.strip()))]

    def _command(self, name: str, args: str, state: ParseState) -> list[EventIn]:
        x = state.extra
        ts = x.get("ts")
        if name in _RUNS and args:
            cmd = f"git {args}" if name == "git" else args
            x["run"] = {"tool": name, "cmd": cmd}
            return [call_event(state, ts, name, None, command=cmd)]
        if name == "undo":
            state.count("rejections")
            files = x.get("files") or []
            return [
                result_event(
                    state,
                    ts,
                    "edit",
                    None,
                    "The user undid aider's last edit and its commit (/undo).",
                    file=files[-1] if files else None,
                    rejected=True,
                )
            ]
        if name in _ASKS and args:
            state.count("prompts")
            x["asked"] = args  # aider logs the question again as an input of its own
            return [EventIn(role="user", kind="message", ts=ts, text=cut(args))]
        return []  # a change of aider's state (/add, /drop, /clear, /model ...)

    def _close_run(self, state: ParseState) -> list[EventIn]:
        """The result of the user's `/run` or `/test`, once its output is all in."""
        run = state.extra.pop("run", None)
        state.extra.pop("ok", None)
        return self._run_result(run, state)

    def _run_result(self, run: dict[str, Any] | None, state: ParseState) -> list[EventIn]:
        """A run's result, once (what aider echoes after it is still the run's)."""
        if not run or "out" not in run or run.get("sent"):
            return []
        run["sent"] = True
        code = run.get("code")
        return [
            result_event(
                state,
                state.extra.get("ts"),
                run["tool"],
                None,
                run["out"],
                exit_code=code,
                is_error=None if code is None else code != 0,
                command=run["cmd"],
            )
        ]

    # -- aider's messages ------------------------------------------------------------------

    def _message(self, msg: str, state: ParseState) -> list[EventIn]:
        """One whole message of aider (a `tool_output` or `confirm_ask` line or lines)."""
        x = state.extra
        ts = x.get("ts")
        if not msg.strip():
            return []
        if msg.startswith(_INTERRUPT):
            if x.get("int"):
                return []  # "^C again to exit" then "^C KeyboardInterrupt": one interrupt
            x["int"] = True
            state.count("interrupts")
            return [
                *self._run_result(x.get("run"), state),
                system_event(ts, "the user interrupted aider"),
            ]
        x["int"] = False
        run = x.get("run")
        if run is not None and "out" not in run and not msg.startswith(_ADD_OUTPUT):
            run["out"] = cut(msg)  # the command's output (aider then echoes it line by line)
            return []
        answered = _question(msg)
        if answered is not None:
            done = self._run_result(run, state) if msg.startswith(_ADD_OUTPUT) else []
            return done + self._answer(*answered, state)
        ran = _EXITED.match(msg)
        if ran:
            code = int(ran.group(2))
            if run and "code" not in run:
                run["code"] = code
                return []
            cmd = ran.group(1)
            return [
                result_event(
                    state, ts, "shell", None, msg, exit_code=code, is_error=code != 0, command=cmd
                )
            ]
        if run is not None:
            return []  # the output echoed line by line, "Added N lines of output to the chat."
        return self._status(msg, state)

    def _status(self, msg: str, state: ParseState) -> list[EventIn]:
        x = state.extra
        ts = x.get("ts")
        applied = _APPLIED.match(msg)
        if applied:
            f = applied.group(1).strip()
            state.count("edits_applied")
            x["files"] = [*(x.get("files") or [])[-9:], f]
            new = (x.get("edits") or {}).get(f)
            return [
                call_event(
                    state,
                    ts,
                    "edit",
                    None,
                    file=f,
                    summary=f"edit {os.path.basename(f)}",
                    detail=new,
                ),
                result_event(state, ts, "edit", None, msg, file=f),
            ]
        if _NO_MATCH.match(msg):
            state.count("edit_failures")
            m = _NO_MATCH_FILE.search(msg)
            f = m.group(1) if m else None
            return [
                call_event(state, ts, "edit", None, file=f, summary="SEARCH/REPLACE edit"),
                result_event(state, ts, "edit", None, msg, is_error=True, file=f),
            ]
        running = _RUNNING.match(msg)
        if running and x.get("ok"):  # a command the model proposed, the user said yes to
            return [call_event(state, ts, "shell", None, command=running.group(1).strip())]
        if msg.startswith("Tokens: "):
            state.count("llm_calls")
        elif _COMMIT.match(msg):
            state.count("commits")
        elif _API_ERROR.match(msg):
            state.count("api_errors")
            return [system_event(ts, f"aider's model call failed: {first_line(msg)}")]
        else:
            state.count("status")
        x["shown"] = msg
        return []

    def _answer(self, question: str, answer: str, state: ParseState) -> list[EventIn]:
        """A question aider asked and the user's answer."""
        x = state.extra
        ts = x.get("ts")
        shown = x.pop("shown", None)
        no = answer.lower() in _NO
        if question.startswith("Run shell command") and not no:
            x["ok"] = True
        if question.startswith("Run shell command") and no and shown:
            out = []
            for cmd in (c.strip() for c in shown.splitlines()):
                if not cmd:
                    continue
                state.count("rejections")
                out.append(call_event(state, ts, "shell", None, command=cmd))
                out.append(
                    result_event(
                        state,
                        ts,
                        "shell",
                        None,
                        "The user declined to run this command.",
                        command=cmd,
                        rejected=True,
                    )
                )
            return out
        if no and question.startswith(("Create new file", "Allow creation", "Allow edits")):
            state.count("rejections")
            m = re.search(r"(?:new file|edits to) (\S+?)(?: which|\?|$)", question)
            f = m.group(1) if m else (shown.strip() if shown and "\n" not in shown else None)
            return [
                call_event(state, ts, "edit", None, file=f, summary="edit"),
                result_event(
                    state,
                    ts,
                    "edit",
                    None,
                    f"The user answered no: {question}",
                    file=f,
                    rejected=True,
                ),
            ]
        if question.startswith(_ADD_OUTPUT) and answer and answer.lower() not in _YES and not no:
            state.count("prompts")  # what to make of the output, in the user's words
            return [EventIn(role="user", kind="message", ts=ts, text=cut(answer))]
        return []


def _user_line(line: str) -> bool:
    return line.startswith("#### ") and line.endswith("  ")


def _keep(x: dict[str, Any], line: str) -> None:
    """A line of the current block; a very long block keeps its head and its tail."""
    lines = x.setdefault("lines", [])
    lines.append(line)
    size = x.get("size", 0) + len(line) + 1
    if size > _BUFFER:
        text = cut("\n".join(lines), 2 * MAX_TEXT) or ""
        x["lines"] = text.split("\n")
        size = len(text)
    x["size"] = size if lines else 0


def _command(word: str) -> str:
    """The aider command a typed word names (a unique prefix names it too)."""
    word = word.lower()
    if word in _COMMANDS:
        return word
    found = [c for c in _COMMANDS if c.startswith(word)]
    return found[0] if len(found) == 1 else word


def _question(msg: str) -> tuple[str, str] | None:
    """(question, answer) of a `confirm_ask`/`prompt_ask` line, None for another message."""
    first = msg.split("\n", 1)[0]
    at = first.rfind("?")
    if at < 0 or not re.match(r"^[A-Z][^:]*\?", first):
        return None
    head = msg.find("?")
    question = msg[: head + 1].strip()
    rest = msg[head + 1 :]
    while True:
        m = _OPTIONS.match(rest)
        if not m or not m.group(0):
            break
        rest = rest[m.end() :]
    answer = rest.strip()
    if "\n" in answer:
        return None  # not a question and its answer (a message that holds a question mark)
    return question, answer


def _iso(stamp: str) -> str:
    """The header's local time as UTC ISO 8601."""
    local = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").astimezone()
    return local.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


ADAPTER = Aider()
