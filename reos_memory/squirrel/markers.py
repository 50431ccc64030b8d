"""How Squirrel knows its own output, so that it is never learned again.

What get_task_context wraps its output in: anything between these markers in an event is
Squirrel's own injection and is cut out before anything else. And the marks of a Memory Writer
run through the agent's CLI."""

import os

CONTEXT_OPEN = '<squirrel-context id="{id}">'
CONTEXT_CLOSE = "</squirrel-context>"

# A Memory Writer run through the agent's CLI (`claude -p`, `codex exec`) is marked twice so
# that it is never learned from: this variable is in its environment (our Claude Code hook
# exits at once when it sees it), and its working directory's name starts with this prefix
# (a transcript the CLI writes anyway is recognised by its `cwd` and skipped).
WRITER_RUN_ENV = "REOS_MEMORY_WRITER_RUN"
WRITER_RUN_DIR_PREFIX = "reos-memory-writer-"


def is_writer_run_dir(cwd: str | None) -> bool:
    """Whether a session ran in a writer run's directory (its transcript is never learned)."""
    if not cwd:
        return False
    return os.path.basename(os.path.normpath(cwd)).startswith(WRITER_RUN_DIR_PREFIX)
