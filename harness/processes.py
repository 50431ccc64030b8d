"""Live processes as /proc shows them (no `ps` needed): for tests and benchmarks that count the
hook's services, workers and calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def live() -> Iterator[tuple[int, list[bytes], Path]]:
    """(pid, command-line arguments, /proc dir) of every process that runs (zombies left out)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            yield int(proc.name), args, proc


def hook_pids(db: Path, flag: str) -> list[int]:
    """Pids of live `reos-memory hook` processes of this database with this flag (`--serve`:
    warm services, `--worker`: queue workers)."""
    me, want = str(db).encode(), flag.encode()
    return [pid for pid, args, _ in live() if want in args and me in args and b"hook" in args]
