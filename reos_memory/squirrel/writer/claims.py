"""Who holds a claim on an episode: host, pid namespace, pid and the process's start time, and
whether that process is gone. A claim of a process of this host and namespace that is gone (or
whose pid now names a younger process) is free at once; any other claim waits for the stale
timeout (`runner.STALE_CLAIM`)."""

from __future__ import annotations

import os
import socket

_HOST = socket.gethostname().replace(" ", "_").replace("/", "_")


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def process_stat(pid: int) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command name (empty when unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def started(pid: int) -> str:
    """The process's start time in clock ticks since boot ("-" when unknown)."""
    return _start_time(process_stat(pid))


def _start_time(fields: list[bytes]) -> str:
    return fields[19].decode() if len(fields) > 19 else "-"


def claimant() -> str:
    """This process, as a claim names it (computed each time: a forked child is another)."""
    pid = os.getpid()
    return f"{_HOST}/{_pid_namespace()}/{pid}/{started(pid)}"


def claimant_died(claim: str) -> bool:
    """True when `claim` was taken by a process of this host and pid namespace that no longer
    runs; False when it may run, or cannot be told (another host or namespace, older claims)."""
    parts = claim.rsplit(" ", 1)[-1].split("/")
    if len(parts) != 4 or not parts[2].isdigit():
        return False
    host, ns, pid, started = parts[0], parts[1], int(parts[2]), parts[3]
    if host != _HOST or ns == "-" or ns != _pid_namespace() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive under another user
        return False
    fields = process_stat(pid)
    if fields[:1] == [b"Z"]:
        return True  # exited, not yet reaped by its parent
    now = _start_time(fields)
    return started != "-" and now != "-" and now != started  # the pid was reused
