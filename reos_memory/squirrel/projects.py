"""Projects and owners: stable project ids from a path, and the default owner.

A project is a repository, not a checkout. Its identity is read from the filesystem (no `git`
process is spawned: the hook that asks is latency-bound), starting from the checkout's top
level (the nearest ancestor of `project_root` holding `.git`, symlinks resolved):

1. the top level's **git common dir** locates the repository: every worktree of it shares that
   dir (`.git` is the dir itself, or a file `gitdir: ...` whose dir has a `commondir` file), as
   `git rev-parse --git-common-dir` says;
2. the common dir's `config` names its **origin remote**; when there is one, its URL normalised
   (scheme, user, password, port, query, `.git` suffix and host case dropped) is the identity,
   so every clone of one origin is one project; a repository without origin is known by its
   common dir, so its worktrees are still one project;
3. outside git, the **path** of the directory is the identity.

The id is `<name>-<first 12 hex digits of sha256(identity)>`, the name being the repository's
(from the URL or the main checkout's folder) or the folder's. The id of a directory outside git
is what it always was. Ids given under earlier rules (by checkout path) are merged into the
repository's project the first time any project is resolved (`reconcile`): nothing is lost, and
the old id stays an alias of the new one.
"""

from __future__ import annotations

import dataclasses
import getpass
import hashlib
import os
import re
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import apsw

from reos_memory.errors import InvalidInput
from reos_memory.models import now_iso
from reos_memory.store import Database
from reos_memory.store import projects as project_sql

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
GIT_DIR = "git-dir:"  # identity prefix of a repository known by its common dir
GIT_REMOTE = "git-remote:"  # identity prefix of a repository known by its origin
_MAX_GIT_FILE = 1 << 20  # a `.git` file, `commondir` or `config` larger than this is not git's


@dataclass(frozen=True)
class Project:
    id: str
    root: str | None  # the checkout's top level; None when only an id was given
    identity: str | None = None  # what the id derives from (module docstring)
    aliases: tuple[str, ...] = ()  # identities this checkout had under other rules or states


@dataclass(frozen=True)
class Identity:
    key: str
    name: str
    common_dir: str | None = None  # of a git repository

    @property
    def id(self) -> str:
        return project_id(self.name, self.key)


def project_id(name: str, key: str) -> str:
    """`<name>-<first 12 hex of sha256(key)>`, the name made safe for ids."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    safe = _SAFE.sub("-", name or "root").strip("-.")[:48] or "root"
    return f"{safe}-{digest}"


def git_top_level(path: Path) -> Path | None:
    """The nearest ancestor of `path` (itself included) that holds a `.git` entry."""
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _read_small(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_GIT_FILE + 1)
    except OSError:
        return None
    if len(data) > _MAX_GIT_FILE:
        return None
    return data.decode("utf-8", "surrogateescape")


def git_common_dir(top: Path) -> Path | None:
    """The git common dir of the checkout at `top`, read as git reads it (None: not a usable
    git checkout)."""
    dot = top / ".git"
    if dot.is_dir():
        git_dir = dot
    else:
        text = _read_small(dot)
        if text is None or not text.startswith("gitdir:"):
            return None
        rest = text[len("gitdir:") :].strip()
        if not rest:
            return None
        target = rest.splitlines()[0].strip()
        git_dir = top / target  # an absolute target replaces `top`
    common = git_dir
    named = _read_small(git_dir / "commondir")
    if named is not None and named.strip():
        common = git_dir / named.strip().splitlines()[0]
    try:
        common = Path(os.path.realpath(common))
    except (OSError, ValueError):
        return None
    return common if common.is_dir() else None


_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$", re.S)


def _config_value(raw: str) -> str:
    """A git config value: quotes removed, escapes read, an unquoted comment dropped."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()


def origin_url(common_dir: Path) -> str | None:
    """`remote.origin.url` of a repository's own config (the first one when repeated; includes
    are not followed)."""
    text = _read_small(common_dir / "config")
    if text is None:
        return None
    section: tuple[str, str | None] = ("", None)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        while line.endswith("\\") and i < len(lines):  # a value continued on the next line
            line = line[:-1] + lines[i]
            i += 1
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        m = _SECTION.match(line)
        if m:
            name, sub = m.group(1).lower(), m.group(2)
            if sub is None and "." in name:  # the old [remote.origin] form
                name, sub = name.split(".", 1)
            section = (name, None if sub is None else re.sub(r"\\(.)", r"\1", sub))
            continue
        k = _KEY.match(line)
        if k and section == ("remote", "origin") and k.group(1).lower() == "url":
            value = _config_value(k.group(2) or "")
            if value:
                return value
    return None


_SCP = re.compile(r"^(?:[^@/]*@)?(\[[^\]/]+\]|[^:/\[\]]{2,}):(?!//)(.*)$")


def normalize_remote(url: str, top: Path) -> tuple[str, str] | None:
    """(identity, repository name) of a remote URL: `host/path` for a hosted one (scheme, user,
    password, port, query and `.git` suffix dropped, host in lower case), `file:<absolute
    path>` for a local one; None when it names nothing."""
    u = url.strip()
    if not u or "\x00" in u:
        return None
    host: str | None = None
    path = u
    if "://" in u:
        try:
            parts = urllib.parse.urlsplit(u)
        except ValueError:
            return None
        if parts.scheme.lower() == "file":
            path = urllib.parse.unquote(parts.path)
        else:
            host = (parts.hostname or "").lower()  # never the user, password or port
            path = urllib.parse.unquote(parts.path)
            if not host:
                return None
    else:
        m = _SCP.match(u)
        if m:
            host, path = m.group(1).lower().strip("[]"), m.group(2)
    path = path.replace("\\", "/")
    if host is None:  # a repository on this machine (a path, maybe relative to the checkout)
        path = os.path.realpath(os.path.join(top, path))
    parts_ = [p for p in path.split("/") if p]
    while parts_ and parts_[-1] == ".git":
        parts_.pop()
    if parts_ and parts_[-1].endswith(".git"):
        parts_[-1] = parts_[-1][: -len(".git")]
    parts_ = [p for p in parts_ if p]
    name = parts_[-1] if parts_ else (host or "root")
    if host is not None:
        return f"{host}/{'/'.join(parts_)}".rstrip("/"), name
    return "file:/" + "/".join(parts_), name


def _local_repository(path: str) -> Path | None:
    """The common dir of the repository at `path` on this machine (a checkout or a bare one)."""
    p = Path(path)
    if (p / ".git").exists():
        return git_common_dir(p)
    # a bare repository is its own common dir (the `.git` suffix was dropped from the URL)
    for bare in (p, p.with_name(p.name + ".git")):
        if (bare / "HEAD").is_file() and (bare / "objects").is_dir():
            return Path(os.path.realpath(bare))
    return None


def repository_identity(common: Path, top: Path, depth: int = 0) -> Identity:
    """The identity of the repository whose common dir is `common` (seen from checkout `top`).
    An origin that is a repository on this machine lends its own identity, so a clone of a
    local repository is that repository's project."""
    url = origin_url(common)
    remote = normalize_remote(url, top) if url else None
    if remote is not None and remote[0].startswith("file:") and depth < 4:
        origin = _local_repository(remote[0][len("file:") :])
        if origin is not None and origin != common:
            return dataclasses.replace(
                repository_identity(origin, origin, depth + 1), common_dir=str(common)
            )
    if remote is not None:
        return Identity(GIT_REMOTE + remote[0], remote[1], str(common))
    main = common.parent if common.name == ".git" else common
    name = main.name[: -len(".git")] if main.name.endswith(".git") else main.name
    return Identity(GIT_DIR + str(common), name or main.name, str(common))


def identify(top: Path) -> Identity:
    """The identity of the checkout (or plain directory) whose top level is `top`."""
    common = git_common_dir(top)
    if common is None:
        return Identity(str(top), top.name)
    return repository_identity(common, top)


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
        ident = identify(root)
    except (OSError, ValueError) as exc:
        raise InvalidInput("project_root", f"is not a usable path ({exc})") from None
    aliases = [str(root)]  # the id this checkout had when ids were by path
    if ident.common_dir is not None:
        aliases.append(GIT_DIR + ident.common_dir)  # before its origin was set
    return Project(
        id=ident.id,
        root=str(root),
        identity=ident.key,
        aliases=tuple(a for a in aliases if a != ident.key),
    )


# -- one project per repository in the database ------------------------------------------------


def _worktrees(common: Path) -> Iterable[Path]:
    """The checkouts git lists for a common dir: the main one and the linked worktrees (a
    removed one too, until `git worktree prune`)."""
    if common.name == ".git":
        yield common.parent
    try:
        entries = list(os.scandir(common / "worktrees"))
    except OSError:
        return
    for e in entries:
        text = _read_small(Path(e.path) / "gitdir")
        if text and text.strip():
            yield Path(text.strip().splitlines()[0]).parent


def _identify_rows(
    rows: Sequence[project_sql.ProjectRow], roots: Iterable[str]
) -> dict[str, Identity]:
    """The identity of each project row from before identities, read from its root; a root that
    is gone is looked up among the worktrees of the repositories of `roots` and of the rows."""
    out: dict[str, Identity] = {}
    gone: list[project_sql.ProjectRow] = []
    for r in rows:
        assert r.root is not None
        top = Path(r.root)
        try:
            if top.is_dir():
                out[r.id] = identify(top)
            else:
                gone.append(r)
        except (OSError, ValueError):
            gone.append(r)
    if gone:
        listed: dict[str, Identity] = {}
        for root in {*roots, *(r.root for r in rows if r.root)}:
            try:
                common = git_common_dir(Path(root)) if os.path.isdir(root) else None
                if common is None:
                    continue
                ident = repository_identity(common, Path(root))
                for wt in _worktrees(common):
                    listed.setdefault(os.path.realpath(wt), ident)
            except (OSError, ValueError):
                continue
        for r in gone:
            assert r.root is not None
            out[r.id] = listed.get(os.path.realpath(r.root)) or Identity(
                r.root, r.root.rstrip("/").rsplit("/", 1)[-1]
            )
    return out


def reconcile(
    db: Database, proj: Project | None, on_merge: Callable[[dict[str, Any]], None] | None = None
) -> list[dict[str, Any]]:
    """Make the database hold one project per repository: rows from before identities get
    theirs (from their roots), and rows that turn out to be the same repository as another, or
    as `proj` (under an alias identity: its old path id, its common dir before an origin), are
    merged into it. One read when there is nothing to do."""
    mine = (proj.identity, *proj.aliases) if proj is not None and proj.identity else ()
    me = proj.id if proj is not None else None
    todo = db.read(lambda c: project_sql.pending(c, me, mine))
    if not todo:
        return []
    legacy = [r for r in todo if r.identity is None]
    found = _identify_rows(legacy, [proj.root] if proj is not None and proj.root else [])

    def tx(conn: apsw.Connection) -> list[dict[str, Any]]:
        now = now_iso()
        merges: list[dict[str, Any]] = []
        # again, under the write lock; a merged id to revive first, before others join it
        rows = project_sql.pending(conn, me, mine)
        for r in sorted(rows, key=lambda r: r.merged_into is None):
            if r.merged_into is not None:
                project_sql.revive(conn, r.id)
            elif r.identity is None:
                ident = found.get(r.id)
                if ident is None:
                    continue  # a row that appeared meanwhile: the next resolve takes it
                project_sql.set_identity(conn, r.id, ident.key)
                if ident.id != r.id:
                    project_sql.touch_project(conn, ident.id, r.root, now, ident.key)
                    live = project_sql.canonical(conn, ident.id)
                    target = live[0] if live is not None else ident.id
                    if target != r.id:
                        merges.append(project_sql.merge(conn, r.id, target, now))
            elif proj is not None and r.id != proj.id:
                project_sql.touch_project(conn, proj.id, proj.root, now, proj.identity)
                merges.append(project_sql.merge(conn, r.id, proj.id, now))
        return merges

    merges = db.write(tx)
    for m in merges:
        if on_merge is not None:
            on_merge(m)
    return merges


# A server resolves the same checkout on every request: its identity (a dozen file reads) is
# read again after a few seconds only. A change inside that window (an origin just added) is
# caught by the next read, whose resolve merges the id used meanwhile (an alias identity).
_RECENT: dict[str, tuple[float, Project]] = {}
_RECENT_S = 2.0
_RECENT_MAX = 256


def _recent_project(project_root: str) -> Project:
    now = time.monotonic()
    hit = _RECENT.get(project_root)
    if hit is not None and now - hit[0] < _RECENT_S:
        return hit[1]
    proj = project_for_root(project_root)
    if len(_RECENT) >= _RECENT_MAX:
        _RECENT.clear()
    _RECENT[project_root] = (now, proj)
    return proj


def resolve_project(
    db: Database,
    project_id: str | None,
    project_root: str | None,
    *,
    required: bool = True,
    on_merge: Callable[[dict[str, Any]], None] | None = None,
) -> Project | None:
    """The project named by `project_id` and/or `project_root` (None if neither and the caller
    allows that, e.g. for global memories), the database reconciled first. An id merged into
    another project names that one."""
    if project_root is not None:
        proj = _recent_project(project_root)
        reconcile(db, proj, on_merge)
        if project_id is not None and project_id != proj.id:
            live = db.read(lambda c: project_sql.canonical(c, project_id))
            if live is None or live[0] != proj.id:
                raise InvalidInput(
                    "project_id",
                    f"give project_id or project_root, not both (project_root maps to {proj.id!r})",
                )
        return proj
    if project_id is not None:
        reconcile(db, None, on_merge)
        live = db.read(lambda c: project_sql.canonical(c, project_id))
        if live is None:
            return Project(id=project_id, root=None)
        return Project(id=live[0], root=live[1], identity=live[2])
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
