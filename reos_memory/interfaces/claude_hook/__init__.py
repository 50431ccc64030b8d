"""`reos-memory hook claude-code`: how memories get back into Claude Code, and how its
transcript gets to Squirrel, through the agent's own hooks.

Claude Code runs the command with one JSON object on stdin (`hook_event_name`, `session_id`,
`transcript_path`, `cwd`, `prompt`, `source`, ...):

* `SessionStart`: `hookSpecificOutput.additionalContext` holds get_task_context for the project
  (the task: the session's first prompt when the transcript has one, else the project's most
  important memories), within `hook_context_budget` tokens.
* `UserPromptSubmit`: context for the prompt, only memories not injected earlier in the session
  and only ones similar to the prompt, within `hook_prompt_budget`; no output at all otherwise.
  Both are answered by the warm service of the database (`warm.py`: one process per database
  over a Unix socket, started on demand, gone when idle), else in this process (`context.py`).
* `Stop`, `SubagentStop`, `PreCompact`, `SessionEnd`: the transcript (and its subagent files) is
  ingested from its cursor, and on SessionEnd the session is ended, by a detached worker
  (`queue.py`): the hook itself returns at once.

The hook never breaks the agent: whatever fails, it prints nothing to stdout and exits 0 (the
reason goes to `<db>.hook.log`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Iterator
from typing import BinaryIO

from reos_memory.config import Config
from reos_memory.interfaces.claude_hook import context, queue, warm
from reos_memory.interfaces.claude_hook.common import Opener, log_line
from reos_memory.squirrel.markers import WRITER_RUN_ENV

MAX_INPUT = context.MAX_INPUT
work = queue.work
serve = warm.serve

__all__ = ["MAX_INPUT", "run", "serve", "work"]


def run(config: Config, stdin: bytes, open_app: Opener) -> int:
    """Handle one hook call; the answer (if any) is written to stdout. Always returns 0."""
    if os.environ.get(WRITER_RUN_ENV):
        # a Memory Writer run of ours (`claude -p`): never hooked, so never learned from
        return 0
    with _quiet_stdout() as stdout:
        out = b""
        try:
            out = _respond(config, stdin, open_app)
        except Exception:
            log_line(config, "hook failed: " + traceback.format_exc())
    if out:
        with contextlib.suppress(OSError):
            stdout.write(out)
            stdout.flush()
    return 0


def _respond(config: Config, stdin: bytes, open_app: Opener) -> bytes:
    payload = context.parse(stdin)
    event = payload.get("hook_event_name")
    if event in context.EVENTS:
        got = warm.ask(config, stdin)
        if got is not None:
            return got
        return context.reply(
            config, payload, lambda req: context.answer_once(config, req, open_app)
        )
    if event in queue.INGEST_EVENTS:
        transcript = payload.get("transcript_path")
        if isinstance(transcript, str) and transcript:
            queue.enqueue(config, payload.get("session_id"), transcript, end=event == "SessionEnd")
            queue.spawn_worker(config)
    return b""


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[BinaryIO]:
    """Nothing but the answer may reach stdout: anything printed meanwhile (by us or a library,
    through sys.stdout or the file descriptor) goes to stderr. Yields the real stdout."""
    sys.stdout.flush()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        yield real_stdout.buffer
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        sys.stdout = real_stdout
        os.dup2(out_fd, 1)
        os.close(out_fd)
