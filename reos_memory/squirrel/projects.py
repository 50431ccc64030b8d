"""Projects and owners: stable project ids from a path, and the default owner.

A project id is given by the client, or derived from `project_root`: the git top level when the
path is inside a repository (the nearest ancestor holding `.git`, a directory or a worktree's
file), else the path itself, made absolute with symlinks resolved. The id is
`<folder name>-<first 12 hex digits of sha256(that path)>`, so the same repository at the same
path always maps to the same id, two checkouts at different paths are different projects, and
the id still says which folder it is.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reos_memory.errors import InvalidInput

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Project:
    id: str
    root: str | None  # None when only an id was given


def git_top_level(path: Path) -> Path | None:
    """The nearest ancestor of `path` (itself included) that holds a `.git` entry."""
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_for_root(project_root: str) -> Project:
    """The project a directory belongs to (see the module docstring for the rule)."""
    if not project_root.strip():
        raise InvalidInput("project_root", "must be a non-empty path")
    if "\x00" in project_root:
        raise InvalidInput("project_root", "must not contain a NUL character")
    path = Path(project_root).expanduser()
    if not path.is_absolute():
        raise InvalidInput("project_root", "must be an absolute path")
    try:
        path = Path(os.path.realpath(path))
        root = git_top_level(path) or path
    except (OSError, ValueError) as exc:
        raise InvalidInput("project_root", f"is not a usable path ({exc})") from None
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = _SAFE.sub("-", root.name or "root").strip("-.")[:48] or "root"
    return Project(id=f"{name}-{digest}", root=str(root))


def resolve(
    project_id: str | None, project_root: str | None, *, required: bool = True
) -> Project | None:
    """The project named by exactly one of `project_id` / `project_root` (None if neither and
    the caller allows that, e.g. for global memories)."""
    if project_id is not None and project_root is not None:
        mine = project_for_root(project_root)
        if mine.id != project_id:
            raise InvalidInput(
                "project_id",
                f"give project_id or project_root, not both (project_root maps to {mine.id!r})",
            )
        return mine
    if project_root is not None:
        return project_for_root(project_root)
    if project_id is not None:
        return Project(id=project_id, root=None)
    if required:
        raise InvalidInput("project_id", "give project_id or project_root")
    return None


def default_owner_id() -> str:
    """The OS user name: the owner of memories when the client names none."""
    try:
        return getpass.getuser() or "user"
    except Exception:  # no passwd entry (containers): still a stable owner
        return os.environ.get("USER") or "user"


def owner_of(owner_type: str | None, owner_id: str | None, configured: str = "") -> tuple[str, str]:
    """(owner_type, owner_id) of a request: as given, else the configured owner, else the OS
    user."""
    return owner_type or "user", owner_id or configured or default_owner_id()


def safe_session_id(session_id: str | None) -> str | None:
    """A session id as stored: a stable digest instead of one that holds something secret."""
    if session_id is None:
        return None
    from reos_memory.squirrel.redaction import redact

    if redact(session_id) == session_id:
        return session_id
    return "sess-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def relative_path(path: str | None, root: str | None, field: str = "path") -> str | None:
    """A request path as a clean repository-relative POSIX path ('' = the root)."""
    if path is None:
        return None
    p = path.replace("\\", "/")
    if root is not None and os.path.isabs(p):
        real = os.path.realpath(p)
        try:
            p = os.path.relpath(real, root).replace("\\", "/")
        except ValueError:
            raise InvalidInput(field, "must be inside the project") from None
        if p.startswith(".."):
            raise InvalidInput(field, f"must be inside the project root {root}")
    elif os.path.isabs(p):
        raise InvalidInput(field, "must be relative to the project root (or give project_root)")
    return normalize_prefix(p, field)


def normalize_prefix(path: str, field: str = "path_prefix") -> str:
    """'services//payment-api/' -> 'services/payment-api'; '..' and absolute paths are refused."""
    parts = [x for x in PurePosixPath(path.replace("\\", "/")).parts if x not in ("", ".")]
    if any(x == ".." for x in parts) or path.startswith("/"):
        raise InvalidInput(field, "must be a relative path inside the project, without '..'")
    return "/".join(parts)


def path_inside(path: str, prefix: str) -> bool:
    """True when repository path `path` is `prefix` or below it (whole components only)."""
    return prefix == "" or path == prefix or path.startswith(prefix + "/")
