"""What every part of the hook shares: its files beside the database and its log."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reos_memory.config import Config
from reos_memory.private_files import open_own

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
        # 0600, ours, never through a link: it names projects, errors and what the hook did;
        # no one else reads it, and no one else's link makes its rotation cut another file
        fd = open_own(beside_db(config, ".hook.log"), os.O_RDWR | os.O_APPEND)
        with open(fd, "r+b") as f:
            size = os.fstat(fd).st_size
            if size > LOG_BYTES:
                kept = os.pread(fd, LOG_BYTES // 2, size - LOG_BYTES // 2)
                os.ftruncate(fd, 0)
                f.write(kept)
            line = time.strftime("%Y-%m-%dT%H:%M:%S ") + text.rstrip() + "\n"
            f.write(line.encode("utf-8", errors="replace"))
