"""Ingest session logs through the adapters, from each file's cursor.

Each batch of lines is one write transaction holding the events it produced and the cursor's
new offset and parse state: a crash loses the batch and its cursor move together, so a line is
never ingested twice and never skipped. Episodes cut by a batch go to the Memory Writer after it
commits (an unprocessed episode is retried later, nothing is lost). A session ends when the
caller says so (the SessionEnd hook) or when its file has been idle past `idle_seconds`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

import apsw

from reos_memory.errors import InvalidInput, ReosError
from reos_memory.models import EventIn, now_iso
from reos_memory.squirrel.api import EpisodeRun, TranscriptResult
from reos_memory.squirrel.ingest import AGENT_NAMES, episodes, reader
from reos_memory.squirrel.ingest.base import Adapter, Parsed, ParseState, Place, Record
from reos_memory.squirrel.markers import is_writer_run_dir
from reos_memory.squirrel.projects import Project, safe_session_id
from reos_memory.squirrel.writer.runner import CatchUp
from reos_memory.store import projects as project_sql
from reos_memory.store import sessions as session_sql
from reos_memory.store import transcripts as transcript_sql

if TYPE_CHECKING:
    from reos_memory.squirrel.facade import Settings
    from reos_memory.squirrel.memory.policy import Policy
    from reos_memory.squirrel.writer.runner import Helper, Runner
    from reos_memory.store import Database

T = TypeVar("T")


@dataclass(frozen=True)
class IngestDeps:
    """What reading agents' logs needs of Squirrel (`Squirrel.ingest_deps` builds it): the
    database, the settings, the Memory Writer (built on first use), the default owner, the
    episode limits, and how a project and its policy are found."""

    db: Database
    settings: Settings
    writer: Callable[[], Runner]
    owner: tuple[str, str]
    policy: Callable[[str | None], Policy]
    project_policy: Callable[[str | None], Policy]
    project: Callable[[str | None, str | None], Project]
    limits: episodes.Limits


def _adapters() -> dict[str, Adapter]:
    """Every agent's adapter by its name: the `ADAPTER` of each module named in `_MODULES`."""
    out: dict[str, Adapter] = {}
    for module in _MODULES:
        if importlib.util.find_spec(f"{__package__}.{module}") is None:
            continue
        adapter = importlib.import_module(f"{__package__}.{module}").ADAPTER
        out[adapter.name] = adapter
    return out


# a module per agent, named after it (claude_code and codex first: their JSONL is told apart by
# its first records)
_MODULES = tuple(name.replace("-", "_") for name in AGENT_NAMES if name != "auto")
ADAPTERS: dict[str, Adapter] = _adapters()
AGENTS = ("auto", *ADAPTERS)
BATCH_BYTES = 4 << 20
BATCH_EVENTS = 1000


# a cut episode as the Memory Writer left it, or a Future of that when another thread or process
# learns from it
Learned = EpisodeRun | Future[EpisodeRun]
Learn = Callable[[EpisodeRun], Learned]


@dataclass
class Options:
    agent: str = "auto"
    session_end: bool | None = None  # None: end the session once its file is idle
    idle_seconds: float = 1800.0
    # what becomes of a cut episode (default: the Memory Writer now, in this thread); it may
    # return a Future of the result instead
    learn: Learn | None = None
    # the project of sessions whose log names no directory (Cursor's global history, a log
    # copied elsewhere): `sqrl ingest --project-root/--project-id`
    project: Project | None = None


@dataclass
class FileReport:
    path: str
    agent: str | None = None
    session_id: str | None = None
    project_id: str | None = None
    lines: int = 0
    events: int = 0
    malformed: int = 0
    rewritten: bool = False
    ended: bool = False
    skipped_reason: str | None = None
    episodes: list[Learned] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def learned(self) -> list[EpisodeRun]:
        """The episodes, each as the writer left it (waiting for the ones still learning)."""
        return [e.result() if isinstance(e, Future) else e for e in self.episodes]

    def public(self) -> TranscriptResult:
        return TranscriptResult(
            path=self.path,
            agent=self.agent,
            session_id=self.session_id,
            project_id=self.project_id,
            lines=self.lines,
            events=self.events,
            malformed=self.malformed,
            rewritten=self.rewritten,
            session_ended=self.ended,
            skipped_reason=self.skipped_reason,
            episodes=self.learned(),
            counts=self.counts,
        )


def detect(path: str) -> str | None:
    """Which agent wrote a file: a log of another shape by its name and place, a JSONL log by
    its first records (its name is only a hint)."""
    for name, adapter in ADAPTERS.items():
        if adapter.claims(path):
            return name
    jsonl = ADAPTERS["claude-code"]  # reads any JSONL log's records
    for rec in jsonl.records(path, 0, 1 << 20):
        if rec.data is None:
            continue
        for name, adapter in ADAPTERS.items():
            if adapter.sniff(rec.data):
                return name
    return None


def default_roots(
    place: Place | None = None, extra: Iterable[str] = (), projects: Iterable[str] = ()
) -> list[str]:
    """Every agent's default log locations on this machine that exist (after `extra`, the
    configured Claude Code and Codex directories), and the logs agents keep inside the
    `projects` directories (Aider's history), each once."""
    place = place or Place.here()
    adapters = list(ADAPTERS.values())
    found: list[str] = []
    candidates = [
        *extra,
        *(r for a in adapters for r in a.roots(place)),
        *(f for root in projects for a in adapters for f in a.in_project(root)),
    ]
    for root in candidates:
        if root not in found and os.path.exists(root):
            found.append(root)
    return found


def claimed(path: str) -> bool:
    """Whether a file that is not a JSONL log is one of an agent's logs."""
    return any(a.claims(path) for a in ADAPTERS.values())


def find(paths: Iterable[str]) -> list[str]:
    """Every agent's session logs under the given files and directories, oldest first."""
    return reader.find(paths, claimed)


# What a cursor holds, as far as another ingester's commit changes it: every commit moves the
# position or stores events (or at least counts the records it read), so a reader holding an
# older copy of the cursor finds it moved and starts again from it.
Mark = tuple[int, str, int, int, int]


def _mark(c: transcript_sql.Cursor) -> Mark:
    return (c.offset, c.head_sha256, c.rewrites, c.lines, c.events)


NO_PROJECT = (
    "its sessions name no project directory: give the project with --project-root DIR or"
    " --project-id ID (project_root / project_id)"
)


class _NoProject(Exception):
    """A batch none of whose sessions has a project to go to (and none was named)."""

    def __init__(self, events: int) -> None:
        super().__init__(events)
        self.events = events


class _Stale(Exception):
    """Another process moved this file's cursor while we were reading: start again from it."""


def ingest_file(deps: IngestDeps, path: str, opts: Options | None = None) -> FileReport:
    """Ingest what a session log holds beyond its cursor; end its session when due."""
    opts = opts or Options()
    if opts.agent not in AGENTS:
        raise InvalidInput("agent", f"must be one of {', '.join(AGENTS)}")
    path = os.path.realpath(os.path.expanduser(path))
    try:
        os.stat(path)
    except OSError as exc:
        raise InvalidInput("path", f"cannot read {path}: {exc.strerror}") from None
    if not os.path.isfile(path):
        raise InvalidInput("path", "must be a regular file (a session log)")
    for _attempt in range(20):
        rep = FileReport(path)
        try:
            return _ingest_file(deps, path, opts, rep)
        except _Stale:
            continue  # a watcher, a hook worker or a client read it at the same time
    raise InvalidInput("path", "its cursor keeps moving under us (another ingester is busy)")


def _ingest_file(deps: IngestDeps, path: str, opts: Options, rep: FileReport) -> FileReport:
    size = os.stat(path).st_size  # before reading: lines appended meanwhile are read next time
    cur = deps.db.read(lambda c: transcript_sql.get(c, path))
    # what this path's cursor holds now (none yet, for a log carried over from its old name)
    expected = None if cur is None else _mark(cur)
    if cur is None:
        cur = _moved_here(deps, path)  # the same log under a new name (Codex compresses old ones)
    agent = cur.agent if cur is not None else None
    if agent is None:
        agent = detect(path) if opts.agent == "auto" else opts.agent
    if agent is None or agent not in ADAPTERS:
        rep.skipped_reason = "not a session log of a known agent (" + ", ".join(ADAPTERS) + ")"
        return rep
    rep.agent = agent
    adapter = ADAPTERS[agent]
    fresh = cur is None
    if cur is not None and (
        (adapter.shrink_means_rewritten and size < cur.size_seen)
        or adapter.identity(path, cur.head_bytes) != reader.Head(cur.head_sha256, cur.head_bytes)
    ):
        rep.rewritten = fresh = True  # truncated or replaced: what it holds now is new to us
        cur.offset, cur.state_json, cur.ended = 0, "{}", False
        cur.rewrites += 1
        h = adapter.identity(path)
        cur.head_sha256, cur.head_bytes = h.sha256, h.size
    if cur is None:
        h = adapter.identity(path)
        now = now_iso()
        cur = transcript_sql.Cursor(
            path,
            agent,
            h.sha256,
            h.size,
            size,
            0,
            None,
            None,
            "{}",
            0,
            0,
            0,
            0,
            False,
            now,
            now,
        )
    state = ParseState.from_json(cur.state_json)
    state.db = deps.db.path
    if fresh:
        adapter.begin(path, state)
    batch = max(1, min(BATCH_EVENTS, deps.settings.max_events_per_ingest))
    learn = opts.learn or (lambda ep: deps.writer().after_cut(ep, True))
    while True:
        try:
            moved = _batch(
                deps, path, cur, adapter, state, rep, batch, expected, size, learn, opts.project
            )
        except _NoProject as none:
            rep.skipped_reason = NO_PROJECT
            rep.counts = {**state.counts, "no_project": none.events}
            return rep
        if moved is None:
            break  # (the cursor is still where `expected` says: the held-back events go on it)
        expected = moved
    _end_finished(deps, path, state, rep, opts)
    rep.session_id, rep.project_id = cur.session_id, cur.project_id
    rep.counts = dict(state.counts)
    if is_writer_run_dir(state.cwd):
        rep.skipped_reason = "a Memory Writer run of reos-memory (never learned from)"
    idle = time.time() - reader.last_write(path) >= opts.idle_seconds
    end = opts.session_end if opts.session_end is not None else idle
    if end and cur.session_id is not None and not cur.ended:
        expected = _finish(
            deps, path, cur, adapter, state, rep, expected, size, learn, opts.project
        )
        rep.episodes.extend(end_session(deps, cur.session_id, opts.learn))
        rep.ended = True
    if state.live and opts.session_end is not False:
        # the other sessions this log holds end once idle by their own latest event
        ended = end_live_sessions(deps, path, opts.idle_seconds, bool(opts.session_end), opts.learn)
        for eps in ended.values():
            rep.episodes.extend(eps)
    return rep


def _end_finished(
    deps: IngestDeps, path: str, state: ParseState, rep: FileReport, opts: Options
) -> None:
    """End the sessions the log said are over (a later run of the agent began in it)."""
    if not state.finished:
        return
    for sid in state.finished:
        rep.episodes.extend(end_session(deps, _safe(sid), opts.learn))

    def tx(conn: apsw.Connection) -> None:
        stored = transcript_sql.get(conn, path)
        if stored is None:
            return
        st = ParseState.from_json(stored.state_json)
        st.finished = [s for s in st.finished if s not in state.finished]
        stored.state_json = st.to_json()
        transcript_sql.put(conn, stored)

    deps.db.write(tx)
    state.finished = []


def _moved_here(deps: IngestDeps, path: str) -> transcript_sql.Cursor | None:
    """The cursor of the same log under its sibling name (`x.jsonl` <-> `x.jsonl.zst`), when
    that log's content starts the same: Codex compresses idle rollouts and decompresses them to
    resume. The cursor carries over, so nothing is read twice."""
    sibling = path[: -len(".zst")] if reader.compressed(path) else path + ".zst"
    old = deps.db.read(lambda c: transcript_sql.get(c, sibling))
    if old is None or not reader.same_head(path, reader.Head(old.head_sha256, old.head_bytes)):
        return None
    moved = dataclasses.replace(old, path=path, size_seen=0, ended=old.ended)
    return moved


@dataclass(slots=True)
class _Read:
    """One batch of records as read: its events by session (and each session's working
    directory when the log names one per session), the counts, the position reached."""

    events: dict[str, list[EventIn]]
    cwds: dict[str, str]
    n_events: int
    lines: int
    malformed: int
    end: int


@dataclass(slots=True)
class _Plan:
    """What a batch's sessions are learned with, found before the write lock is taken."""

    projects: dict[str, Project | None]
    owner: tuple[str, str]
    pols: dict[str, Policy]
    limits: episodes.Limits
    prepared: dict[str, episodes.Prepared | None]


def _batch(
    deps: IngestDeps,
    path: str,
    cur: transcript_sql.Cursor,
    adapter: Adapter,
    state: ParseState,
    rep: FileReport,
    max_events: int,
    expected: Mark | None,
    size: int,
    learn: Learn,
    fallback: Project | None = None,
) -> Mark | None:
    """Read, parse and commit one batch of records; returns what the cursor now holds, None
    when there was nothing new. Raises _Stale when another process moved the cursor
    meanwhile."""
    read = _read_batch(path, cur.offset, adapter, state, max_events)
    if read.lines == 0:
        return None
    # a young file's identity grows with it (read here, not inside the write transaction)
    grown = adapter.identity(path) if cur.head_bytes < reader.HEAD_BYTES else None
    return _commit(deps, path, cur, state, rep, read, expected, size, learn, grown, fallback)


def _finish(
    deps: IngestDeps,
    path: str,
    cur: transcript_sql.Cursor,
    adapter: Adapter,
    state: ParseState,
    rep: FileReport,
    expected: Mark | None,
    size: int,
    learn: Learn,
    fallback: Project | None = None,
) -> Mark | None:
    """Store the events the adapter held back for the session's end (none for most)."""
    read = _Read({}, {}, 0, 0, 0, cur.offset)
    _collect(read, adapter.finish(state), state)
    if not read.n_events:
        return expected
    try:
        return _commit(deps, path, cur, state, rep, read, expected, size, learn, None, fallback)
    except _NoProject:
        return expected  # (held back still: they go in once a project is named)


def _commit(
    deps: IngestDeps,
    path: str,
    cur: transcript_sql.Cursor,
    state: ParseState,
    rep: FileReport,
    read: _Read,
    expected: Mark | None,
    size: int,
    learn: Learn,
    grown: reader.Head | None,
    fallback: Project | None = None,
) -> Mark:
    """One write transaction: the batch's events and the cursor's new position and state."""
    if read.events and is_writer_run_dir(state.cwd):
        # a Memory Writer run of ours (`claude -p`, `codex exec` in its scratch directory): its
        # log is read past, never learned from
        state.count("writer_runs_skipped", read.n_events)
        read.events = {}
    plan = _plan(deps, read.events, read.cwds, state.cwd, fallback)

    def tx(conn: apsw.Connection) -> tuple[list[EpisodeRun], transcript_sql.Cursor, int]:
        stored = transcript_sql.get(conn, path)
        if (None if stored is None else _mark(stored)) != expected:
            raise _Stale()
        new = dataclasses.replace(cur)  # the caller's copy changes only once this commits
        cut, lost = _ingest_sessions(deps, conn, new, read.events, plan)
        new.session_id = safe_session_id(state.session_id) or new.session_id
        new.offset = read.end
        new.size_seen = size  # as stat'ed before reading
        new.state_json = state.to_json()
        new.lines += read.lines
        new.events += read.n_events
        new.malformed += read.malformed
        new.updated_at = now_iso()
        if grown is not None:
            new.head_sha256, new.head_bytes = grown.sha256, grown.size
        transcript_sql.put(conn, new)
        return cut, new, lost

    cut, new, lost = deps.db.write(tx)
    vars(cur).update(vars(new))
    if lost:
        state.count("no_project", lost)
    rep.lines += read.lines
    rep.events += read.n_events
    rep.malformed += read.malformed
    rep.episodes.extend(learn(ep) for ep in cut)
    return _mark(cur)


def _read_batch(
    path: str, offset: int, adapter: Adapter, state: ParseState, max_events: int
) -> _Read:
    """Records from `offset` (about BATCH_BYTES of them, stopping once max_events events are
    parsed), parsed into events by session; empty, bookkeeping and malformed records are read
    past."""
    read = _Read({}, {}, 0, 0, 0, offset)
    for rec in _records(adapter, path, offset):
        read.lines += 1
        read.end = rec.end
        if rec.data is None:
            read.malformed += rec.malformed
            continue
        try:
            parsed = adapter.parse(rec.data, state)
        except Exception:
            read.malformed += 1  # a record of a shape no version wrote: skipped, never fatal
            continue
        _collect(read, parsed, state)
        if read.n_events >= max_events:
            break
    return read


def _records(adapter: Adapter, path: str, offset: int) -> Iterator[Record]:
    try:
        yield from adapter.records(path, offset, BATCH_BYTES)
    except (OSError, ValueError) as exc:
        # a database locked by its agent, a document caught half-written: read again next time
        raise InvalidInput("path", f"cannot read {path} now: {exc}") from None


def _collect(read: _Read, parsed: list[Parsed], state: ParseState) -> None:
    for p in parsed:
        sid = _safe(p.session_id)
        read.events.setdefault(sid, []).append(p.event)
        if p.cwd:
            read.cwds[sid] = p.cwd
        read.n_events += 1


def _plan(
    deps: IngestDeps,
    events: dict[str, list[EventIn]],
    cwds: dict[str, str],
    cwd: str | None,
    fallback: Project | None = None,
) -> _Plan:
    """Each session's project and policy, and its events prepared: the costly part (redaction,
    signals, cutting) before the write lock is taken, so other processes on the database wait
    only for the writes. `fallback`: the project of a session whose log names no directory.
    Raises _NoProject, before any of that, when no session has a project."""
    projects = {sid: _project(deps, sid, cwds.get(sid) or cwd) or fallback for sid in events}
    if events and all(p is None for p in projects.values()):
        # nothing here has a project: the cursor stays, so that naming one reads it all
        raise _NoProject(sum(len(evs) for evs in events.values()))
    owner = deps.owner
    pols = {sid: deps.policy(p.root) for sid, p in projects.items() if p is not None}
    limits = deps.limits
    prepared = {
        sid: _prepare(deps, sid, projects[sid], owner, evs, limits) for sid, evs in events.items()
    }
    return _Plan(projects, owner, pols, limits, prepared)


def _ingest_sessions(
    deps: IngestDeps,
    conn: apsw.Connection,
    new: transcript_sql.Cursor,
    events: dict[str, list[EventIn]],
    plan: _Plan,
) -> tuple[list[EpisodeRun], int]:
    """Each session's events stored in its project (inside the batch's transaction); returns
    the episodes cut and the count of events that had no project to go to."""
    cut: list[EpisodeRun] = []
    lost = 0
    for sid, evs in events.items():
        proj = _session_project(conn, sid) or plan.projects[sid]
        if proj is None:
            lost += len(evs)  # no cwd anywhere: no project to learn for
            continue
        pol = plan.pols.get(sid) or deps.policy(proj.root)
        report = episodes.store_session(
            conn, proj, plan.owner, sid, evs, False, pol, plan.limits, plan.prepared[sid]
        )
        cut.extend(report.episodes)
        new.session_id = new.session_id or sid
        new.project_id = new.project_id or proj.id
        new.ended = False
    return cut, lost


def _prepare(
    deps: IngestDeps,
    session_id: str,
    proj: Project | None,
    owner: tuple[str, str],
    evs: list[EventIn],
    limits: episodes.Limits,
) -> episodes.Prepared | None:
    if proj is None:
        return None
    base = deps.db.read(lambda c: session_sql.get_session(c, session_id))
    try:
        return episodes.prepare(
            base,
            project_id=proj.id,
            owner=owner,
            session_id=session_id,
            events=evs,
            session_end=False,
            limits=limits,
        )
    except ReosError:
        return None  # the transaction meets the same problem and says so


@functools.lru_cache(maxsize=256)
def _safe(session_id: str) -> str:
    return safe_session_id(session_id) or session_id


def _project(deps: IngestDeps, session_id: str, cwd: str | None) -> Project | None:
    known = deps.db.read(lambda c: _session_project(c, session_id))
    if known is not None:
        return known
    return deps.project(None, cwd) if cwd else None


def _session_project(conn: apsw.Connection, session_id: str) -> Project | None:
    sess = session_sql.get_session(conn, session_id)
    if sess is None:
        return None
    return Project(sess["project_id"], project_sql.project_root(conn, sess["project_id"]))


def end_session(deps: IngestDeps, session_id: str, learn: Learn | None = None) -> list[Learned]:
    """Cut a session's open episode as ended and mark its files' cursors."""
    limits = deps.limits
    pid = deps.db.read(lambda c: (session_sql.get_session(c, session_id) or {}).get("project_id"))
    pol = deps.project_policy(pid)

    def tx(conn: apsw.Connection) -> list[EpisodeRun]:
        ep = episodes.flush_session(conn, session_id, limits, pol.regret, reason="session_end")
        session_sql.end_session(conn, session_id)
        transcript_sql.mark_ended(conn, session_id, now_iso())
        return [ep] if ep is not None else []

    learn = learn or (lambda ep: deps.writer().after_cut(ep, True))
    return [learn(ep) for ep in deps.db.write(tx)]


def end_idle_sessions(
    deps: IngestDeps,
    idle_seconds: float,
    only: set[str] | None = None,
    force: bool = False,
    learn: Learn | None = None,
) -> dict[str, list[Learned]]:
    """End the open sessions (of `only`, when given) all of whose files have been idle past
    `idle_seconds` (every one of them, with `force`); returns the episodes each ended session
    was cut into. Sessions of a log that holds many end by their own latest event."""
    rows = deps.db.read(transcript_sql.open_sessions)
    by_session: dict[str, list[str]] = {}
    for path, sid, _pid in rows:
        if only is None or sid in only:
            by_session.setdefault(sid, []).append(path)
    now = time.time()
    ended: dict[str, list[Learned]] = {}
    for sid, paths in by_session.items():
        try:
            idle = all(now - reader.last_write(p) >= idle_seconds for p in paths)
        except OSError:
            idle = True  # a deleted log will not grow any more
        if force or idle:
            for p in paths:
                _finish_held_back(deps, p, learn)
            ended[sid] = end_session(deps, sid, learn)
    for path in deps.db.read(transcript_sql.with_live_sessions):
        for sid, eps in end_live_sessions(deps, path, idle_seconds, force, learn, only).items():
            ended.setdefault(sid, []).extend(eps)
    return ended


def _finish_held_back(deps: IngestDeps, path: str, learn: Learn | None) -> None:
    """Store what a log's adapter held back for the session's end (its last block)."""
    cur = deps.db.read(lambda c: transcript_sql.get(c, path))
    adapter = ADAPTERS.get(cur.agent) if cur is not None else None
    if cur is None or adapter is None or type(adapter).finish is Adapter.finish:
        return
    state = ParseState.from_json(cur.state_json)
    state.db = deps.db.path
    expected = _mark(cur)
    with contextlib.suppress(_Stale):  # its reader stored it meanwhile
        _finish(
            deps,
            path,
            cur,
            adapter,
            state,
            FileReport(path),
            expected,
            cur.size_seen,
            learn or (lambda ep: deps.writer().after_cut(ep, True)),
        )


def end_live_sessions(
    deps: IngestDeps,
    path: str,
    idle_seconds: float,
    force: bool = False,
    learn: Learn | None = None,
    only: set[str] | None = None,
) -> dict[str, list[Learned]]:
    """End the sessions a log of many holds (a database) whose latest event is older than
    `idle_seconds` (all of them with `force`), and forget them in its cursor."""
    cur = deps.db.read(lambda c: transcript_sql.get(c, path))
    if cur is None:
        return {}
    live = ParseState.from_json(cur.state_json).live
    now = time.time()
    due = [
        sid
        for sid, ts in live.items()
        if (only is None or _safe(sid) in only) and (force or now - _epoch(ts, now) >= idle_seconds)
    ]
    if not due:
        return {}
    ended = {_safe(sid): end_session(deps, _safe(sid), learn) for sid in due}

    def tx(conn: apsw.Connection) -> None:
        stored = transcript_sql.get(conn, path)
        if stored is None:
            return
        st = ParseState.from_json(stored.state_json)
        for sid in due:
            st.live.pop(sid, None)
        stored.state_json = st.to_json()
        transcript_sql.put(conn, stored)

    deps.db.write(tx)
    return ended


def _epoch(ts: str, default: float) -> float:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return default


def _log_group(path: str) -> str:
    """The session log a file belongs with by its place: a subagent's
    `<session>/subagents/*.jsonl` with `<session>.jsonl` beside that folder (Claude Code) or
    inside it (Cursor's `<id>/<id>.jsonl`), a compressed rollout with its uncompressed name, any
    other log with itself."""
    path = os.path.realpath(path).removesuffix(".zst")
    parent = os.path.dirname(path)
    if os.path.basename(parent) == "subagents":
        session = os.path.dirname(parent)
        inside = os.path.join(session, os.path.basename(session) + ".jsonl")
        return inside if os.path.exists(inside) else session + ".jsonl"
    return path


def _live_sessions(deps: IngestDeps, path: str) -> set[str]:
    """The sessions other than its own that a log of many holds open (as stored)."""
    cur = deps.db.read(lambda c: transcript_sql.get(c, path))
    if cur is None:
        return set()
    return {_safe(sid) for sid in ParseState.from_json(cur.state_json).live}


def ingest_paths(
    deps: IngestDeps,
    paths: Iterable[str],
    opts: Options | None = None,
    progress: Callable[[int, int, FileReport], None] | None = None,
    helper: Helper | None = None,
) -> list[FileReport]:
    """Every session log under `paths`, oldest first; a file that fails is reported, not fatal
    for the others. Sessions end after all their files are in (a subagent's file after its
    parent's), when `opts.session_end` says so or, by default, when all their files are idle.

    The Memory Writer learns from the cut episodes in the order they were cut, while the next
    logs are read: on a thread of its own (its embeddings run outside the GIL), or in `helper`,
    a second process."""
    opts = opts or Options()
    ending = opts.session_end is not False
    force = bool(opts.session_end)
    learning = CatchUp(deps.writer(), helper)
    try:
        each = Options(opts.agent, False, opts.idle_seconds, learning.learn, opts.project)
        files = find(paths)
        left = Counter(_log_group(f) for f in files)
        group_sessions: dict[str, set[str]] = {}
        out = []
        ended: dict[str, list[Learned]] = {}
        live: dict[str, set[str]] = {}

        def end(sessions: set[str]) -> None:
            # a short transaction here, the episodes it cuts learned like the others
            found = end_idle_sessions(deps, opts.idle_seconds, sessions, force, learning.learn)
            for sid, eps in found.items():
                ended.setdefault(sid, []).extend(eps)

        for i, f in enumerate(files):
            try:
                rep = ingest_file(deps, f, each)
            except InvalidInput as exc:
                rep = FileReport(os.path.realpath(f), skipped_reason=exc.message)
            except ReosError:
                raise  # the database itself failed: stop, the cursors say where to resume
            except Exception as exc:  # an unreadable file (a corrupt archive...) spoils only it
                rep = FileReport(os.path.realpath(f), skipped_reason=f"{type(exc).__name__}: {exc}")
            out.append(rep)
            group = _log_group(f)
            if rep.session_id is not None:
                group_sessions.setdefault(group, set()).add(rep.session_id)
            if ending and rep.agent is not None:
                # a log of many sessions (a database): its other sessions end with it
                live[rep.path] = _live_sessions(deps, rep.path)
                group_sessions.setdefault(group, set()).update(live[rep.path])
            left[group] -= 1
            if ending and left[group] == 0 and group in group_sessions:
                # the last file of a session is in: its last episode goes to the writer now,
                # while the next logs are read, rather than all of them at the end
                end(group_sessions.pop(group))
            if progress is not None:
                progress(i + 1, len(files), rep)
        if ending:
            # a session whose files lie elsewhere than beside each other (none that the agents
            # write today) ends once all of them are in
            end({r.session_id for r in out if r.session_id is not None} - set(ended))
            reported: set[str] = set()
            for r in out:  # the session's last episode is reported with its first file
                if r.session_id in ended:
                    r.ended = True
                mine = {r.session_id} if r.session_id is not None else set()
                for sid in sorted((mine | live.get(r.path, set())) - reported):
                    if sid in ended:
                        reported.add(sid)
                        r.episodes.extend(ended[sid])
        for r in out:  # every writer call has finished: the results replace their futures
            r.episodes = list(r.learned())
    finally:
        learning.close()
    return out
