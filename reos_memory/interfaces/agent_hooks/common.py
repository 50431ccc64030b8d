"""What every part of the hook shares: its files beside the database and its log."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reos_memory.config import Config

if TYPE_CHECKING:
    from reos_memory.embeddings.base import Embedder
    from reos_memory.interfaces.services import Services

LOG_BYTES = 1 << 20


class Opener(Protocol):
    """Opens the App a hook works with (`reos_memory.app.open_app`, handed down by the command
    line: an interface never imports the composition root). `preloaded` maps an embedder
    setting to a callable returning that embedder, already being built."""

    def __call__(
        self,
        config: Config,
        *,
        needs_model: bool,
        wait: bool = True,
        preloaded: dict[str, Callable[[], Embedder]] | None = None,
    ) -> Services: ...


def beside_db(config: Config, suffix: str) -> Path:
    """A file or folder of the hook's next to its database (one set per database)."""
    db = Path(config.db).expanduser().resolve()
    return db.with_name(db.name + suffix)


def log_line(config: Config, text: str) -> None:
    """Append to the hook log `<db>.hook.log` (kept under 1 MB: the older half is dropped)."""
    with contextlib.suppress(OSError):
        path = beside_db(config, ".hook.log")
        if path.exists() and path.stat().st_size > LOG_BYTES:
            data = path.read_bytes()[-LOG_BYTES // 2 :]
            path.write_bytes(data)
        # 0600: it names projects, errors and what the hook did; no one else reads it
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with open(fd, "a", encoding="utf-8") as f:
            if os.fstat(fd).st_mode & 0o077:
                os.fchmod(fd, 0o600)  # (one an older version made 0644)
            f.write(time.strftime("%Y-%m-%dT%H:%M:%S ") + text.rstrip() + "\n")
