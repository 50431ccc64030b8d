"""`reos-memory hook <tool>`: how memories get back into a coding agent, and how its transcript
gets to Squirrel, through the agent's own hooks (Claude Code, Cursor, Gemini CLI, Windsurf, VS
Code Copilot). One code path for all of them; each agent's stdin JSON and answer are its dialect
(`dialects.py`, with the table of which events each handles and which can take context):

* session start: the project's context (get_task_context for the session's first prompt when
  the transcript has one, else the project's most important memories), within
  `hook_context_budget` tokens, in the answer that agent reads into the model's context.
* a prompt: context for the prompt, only memories not injected earlier in the session and only
  ones similar to the prompt, within `hook_prompt_budget`; no output at all otherwise.
  Both are answered by the warm service of the database (`warm.py`: one process per database
  over a Unix socket, started on demand, gone when idle), else in this process (`context.py`).
* a stop, compaction or session end: the transcript is ingested from its cursor (by the
  agent's ingest adapter), and at a session end the session is ended, by a detached worker
  (`queue.py`): the hook itself returns at once.
* a tool's result (Cursor's `postToolUse`, `postToolUseFailure`, `afterShellExecution`; its
  transcripts lack them): one redacted line appended to `<db>.hook-tools/cursor/
  <conversation_id>.jsonl`, for the transcript's adapter (`squirrel/ingest/cursor_sidecar.py`),
  in this process: nothing else is loaded, nothing printed.

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
from reos_memory.interfaces.agent_hooks import context, queue, warm
from reos_memory.interfaces.agent_hooks.common import Opener, beside_db, log_line
from reos_memory.interfaces.agent_hooks.dialects import DIALECTS, INGEST_KINDS, TOOLS
from reos_memory.squirrel.markers import WRITER_RUN_ENV

MAX_INPUT = context.MAX_INPUT
work = queue.work
serve = warm.serve

__all__ = ["MAX_INPUT", "TOOLS", "run", "serve", "work"]


def run(tool: str, config: Config, stdin: bytes, open_app: Opener) -> int:
    """Handle one hook call of `tool`; the answer (if any) is written to stdout. Always
    returns 0."""
    if os.environ.get(WRITER_RUN_ENV):
        # a Memory Writer run of ours (`claude -p`): never hooked, so never learned from
        return 0
    with _quiet_stdout() as stdout:
        out = b""
        try:
            out = _respond(tool, config, stdin, open_app)
        except Exception:
            log_line(config, "hook failed: " + traceback.format_exc())
    if out:
        with contextlib.suppress(OSError):
            stdout.write(out)
            stdout.flush()
    return 0


def _respond(tool: str, config: Config, stdin: bytes, open_app: Opener) -> bytes:
    payload = context.parse(stdin)
    call = DIALECTS[tool].read(payload)
    if call is None:
        return b""
    if call.kind == "tool_result":
        from reos_memory.squirrel.ingest import cursor_sidecar

        cursor_sidecar.record(beside_db(config, cursor_sidecar.SUFFIX), payload)
        return b""
    if context.wanted(call):
        got = warm.ask(config, call)
        if got is not None:
            return got
        return context.reply(config, call, lambda req: context.answer_once(config, req, open_app))
    queued = (
        call.kind in INGEST_KINDS
        and call.transcript
        and queue.enqueue(config, call, end=call.kind == "end") is not None
    )
    if queued:
        queue.spawn_worker(config, tool)
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
