"""The warm service: one process per database that answers every agent's session-start and
prompt calls with the App (database, model, Squirrel service) already open, reached over a
Unix socket.

* Started on demand by the first hook call that finds no service listening; exactly one per
  database: whoever takes `<db>.hook-service.lock` (flock) starts it and hands it the locked
  file, and the service holds that lock for as long as it runs.
* Exits when idle for `hook_service_idle_s` seconds (0: no service, every call in-process), on
  SIGTERM, when its database or its socket file is removed or replaced, and after a call made
  with other settings (the next call starts one with those).
* The socket is `<db>.hook.sock` (mode 0600), or `$XDG_RUNTIME_DIR/reos-memory/<hash>.sock`,
  else `/tmp/reos-<uid>/<hash>.sock` when that path is too long for AF_UNIX. A hook talks to
  it only when the socket file is this user's and the process on the other end is this user's
  (SO_PEERCRED); the service answers only callers of its own user.
* Wire: the client sends one JSON header line, `{"op": "hook", "config": <fingerprint>}` (or
  `{"op": "status"}`), then the call its dialect read from the hook's stdin (`dialects.Call`
  as a JSON object), and shuts its side; the service answers with a JSON header line
  (`{"ok": true}`, or `{"ok": false, "why": ...}`) and the bytes the hook prints (written by
  the call's dialect). Any failure on the way (no service in time, a refused or dropped
  connection, an answer that is not ok) makes the hook answer in its own process instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import stat
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from reos_memory.config import Config
from reos_memory.interfaces.agent_hooks import context
from reos_memory.interfaces.agent_hooks.common import Opener, beside_db, log_line
from reos_memory.interfaces.agent_hooks.dialects import DIALECTS, Call, Kind
from reos_memory.json_types import JSONMapping, JSONObject
from reos_memory.private_files import open_own, private_dir

if TYPE_CHECKING:
    from reos_memory.interfaces.services import Services

SUN_PATH_MAX = 107  # bytes of an AF_UNIX path (108 with its NUL) on Linux
START_WAIT_S = (
    3.0  # a hook waits this long for a service (a cold one included), then answers itself
)
TICK_S = 0.5  # how often the service looks at its idle time, database and socket
THREADS = 8  # calls answered at once; more wait in the listen queue
REQUEST_TIMEOUT_S = 10.0
MAX_HEADER = 64 << 10


def fingerprint(config: Config) -> str:
    """The settings a service was started with: a call with other settings is not its own."""
    import msgspec

    return hashlib.sha256(msgspec.json.encode(config)).hexdigest()[:16]


def lock_path(config: Config) -> Path:
    return beside_db(config, ".hook-service.lock")


def socket_path(config: Config) -> str:
    """Where the service of this database listens (a private directory; OSError when none)."""
    db = str(Path(config.db).expanduser().resolve())
    beside = db + ".hook.sock"
    if len(os.fsencode(beside)) <= SUN_PATH_MAX:
        return beside
    name = hashlib.sha256(os.fsencode(db)).hexdigest()[:16] + ".sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    dirs = [os.path.join(runtime, "reos-memory")] if runtime else []
    for d in [*dirs, f"/tmp/reos-{os.getuid()}"]:
        path = os.path.join(d, name)
        if len(os.fsencode(path)) <= SUN_PATH_MAX and private_dir(d):
            return path
    raise OSError(f"no private directory with a short enough path for the socket of {db}")


def _file_id(path: str | Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


# -- the hook's side -------------------------------------------------------------------------


def ask(config: Config, hook_call: Call) -> bytes | None:
    """What the warm service says the hook prints; None: answer in this process instead."""
    if config.hook_service_idle_s <= 0:
        return None
    mine = {"op": "hook", "config": fingerprint(config)}
    body = json.dumps(hook_call._asdict()).encode("utf-8", "surrogateescape")
    try:
        head, out = call(config, mine, body, start=hook_call.tool)
    except (OSError, ValueError) as exc:
        log_line(config, f"hook service not used ({type(exc).__name__}: {exc}); answered here")
        return None
    if head.get("ok") is not True:
        log_line(config, f"hook service declined ({head.get('why')}); answered here")
        return None
    return out


def status(config: Config) -> JSONObject:
    """The running service's own account (pid, calls served); OSError when none runs."""
    head, _ = call(config, {"op": "status"}, b"")
    return head


def call(
    config: Config, head: JSONMapping, body: bytes, *, start: str | None = None
) -> tuple[JSONObject, bytes]:
    """One exchange with the service; when none listens, started first by the hook command of
    the tool `start` names (None: not started)."""
    path = socket_path(config)
    deadline = time.monotonic() + START_WAIT_S
    started = False
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                _own_socket(path)
                s.connect(path)
            except (FileNotFoundError, ConnectionRefusedError):
                if not start or time.monotonic() >= deadline:
                    raise
                started = started or _start(config, start)
                time.sleep(0.02)
                continue
            if peer_uid(s) != os.getuid():
                raise PermissionError(f"the process listening on {path} is another user's")
            s.sendall(json.dumps(head).encode() + b"\n" + body)
            s.shutdown(socket.SHUT_WR)
            line, _, rest = _read_all(s, 64 << 20).partition(b"\n")
            got = json.loads(line)
            if not isinstance(got, dict):
                raise ValueError("the hook service's header is not an object")
            return got, rest


def _own_socket(path: str) -> None:
    """Refuse a socket file someone else made (planted beside a database in a folder others
    can write): the prompt would go to their process. FileNotFoundError when there is none."""
    st = os.lstat(path)
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a socket of this user's")


def peer_uid(s: socket.socket) -> int:
    """The OS user of the process at the other end of a connected Unix socket (SO_PEERCRED:
    pid, uid, gid as three ints)."""
    import struct

    creds = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _start(config: Config, tool: str) -> bool:
    """Start the service when no one holds its lock: the child inherits the locked file, so
    no second one can start while it runs. False when the lock is taken (one is starting)."""
    fd = open_own(lock_path(config), os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        import subprocess

        cmd = [sys.executable, "-m", "reos_memory", "hook", tool, "--serve"]
        subprocess.Popen(
            [*cmd, "--lock-fd", str(fd), "--db", config.db],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            pass_fds=(fd,),
            cwd="/",
            env={**os.environ, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")},
        )
        return True
    finally:
        os.close(fd)


def _read_all(s: socket.socket, limit: int) -> bytes:
    parts, n = [], 0
    while n <= limit:
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        parts.append(chunk)
        n += len(chunk)
    return b"".join(parts)


# -- the service's side ----------------------------------------------------------------------


def serve(config: Config, lock_fd: int | None, open_app: Opener) -> int:
    """Run the service of `config.db` until it is idle, told to stop or orphaned. Returns at
    once when another service holds the database's lock."""
    lock = _hold_lock(config, lock_fd)
    if lock is None:
        return 0
    try:
        return _Service(config, open_app).run()
    finally:
        os.close(lock)


def _hold_lock(config: Config, fd: int | None) -> int | None:
    """The service lock as a file descriptor: the one handed down (already locked by the
    starter), else taken now. None when another process holds it."""
    path = lock_path(config)
    if fd is None or _file_id(path) != _fd_id(fd):
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        fd = open_own(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.set_inheritable(fd, False)
    return fd


def _fd_id(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _listen(path: str) -> socket.socket:
    """Listen at `path`, private to this user. A file already there is stale: only the
    holder of the lock ever listens."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600, never readable by others even for an instant
    try:
        s.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    s.listen(64)
    s.settimeout(TICK_S)
    return s


class _Service:
    def __init__(self, config: Config, open_app: Opener) -> None:
        import threading

        self.config = config
        self.open_app = open_app
        self.fingerprint = fingerprint(config)
        self.app: Services | None = None
        self.stopping = threading.Event()
        self.why = ""
        self.mutex = threading.Lock()
        self.busy = 0
        self.served = 0
        self.last = time.monotonic()

    def stop(self, why: str) -> None:
        if not self.stopping.is_set():
            self.why = why
            self.stopping.set()

    def run(self) -> int:
        path = socket_path(self.config)
        listener = _listen(path)
        sock_id = _file_id(path)
        import signal

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda signum, _frame: self.stop(signal.Signals(signum).name))
        log_line(self.config, f"hook service {os.getpid()} listens on {path}")
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(THREADS, thread_name_prefix="hook-call")
        try:
            self.app = self.open_app(context.app_config(self.config), needs_model=True, wait=False)
            db_id = _file_id(self.config.db)
            looked = time.monotonic()
            while not self.stopping.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    conn = None
                if conn is not None:
                    with self.mutex:
                        self.busy += 1
                    pool.submit(self._serve_one, conn)
                if conn is None or time.monotonic() - looked > TICK_S:  # busy or not
                    self._look_around(db_id, path, sock_id)
                    looked = time.monotonic()
        except Exception:
            self.stop("failed: " + traceback.format_exc())
        finally:
            if _file_id(path) == sock_id:  # new callers start a new service from now on
                with contextlib.suppress(OSError):
                    os.unlink(path)
            listener.close()
            pool.shutdown(wait=True)
            if self.app is not None:
                self.app.close()
            log_line(self.config, f"hook service {os.getpid()} exits ({self.why})")
        return 0

    def _look_around(
        self, db_id: tuple[int, int] | None, path: str, sock_id: tuple[int, int] | None
    ) -> None:
        """Stop when idle long enough, or when the database or the socket is gone."""
        with self.mutex:
            idle = self.busy == 0 and time.monotonic() - self.last > self.config.hook_service_idle_s
        if idle:
            self.stop("idle")
        elif _file_id(self.config.db) != db_id:
            self.stop("the database was removed")
        elif _file_id(path) != sock_id:
            self.stop("the socket was removed")

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            with conn:
                if peer_uid(conn) != os.getuid():  # (the socket is 0600: only root gets here)
                    log_line(self.config, "hook service: refused a caller of another user")
                    return
                conn.settimeout(REQUEST_TIMEOUT_S)
                line, _, body = _read_all(conn, context.MAX_INPUT + MAX_HEADER).partition(b"\n")
                head, out = self._reply(json.loads(line[:MAX_HEADER]), body)
                conn.sendall(json.dumps(head).encode() + b"\n" + out)
        except Exception:
            log_line(self.config, "hook service: " + traceback.format_exc())
        finally:
            with self.mutex:
                self.busy -= 1
                self.served += 1
                self.last = time.monotonic()

    def _reply(self, head: object, body: bytes) -> tuple[JSONObject, bytes]:
        fields = head if isinstance(head, dict) else {}  # (not an object: no op)
        op = fields.get("op")
        if op == "status":
            with self.mutex:
                served, busy = self.served, self.busy
            return {"ok": True, "pid": os.getpid(), "served": served, "busy": busy}, b""
        if op != "hook":
            return {"ok": False, "why": f"unknown op {op!r}"}, b""
        if fields.get("config") != self.fingerprint:
            self.stop("a call came with other settings")
            return {"ok": False, "why": "other settings than this service's"}, b""
        try:
            return {"ok": True}, context.reply(self.config, _call_of(body), self._answer)
        except Exception:
            log_line(self.config, "hook failed: " + traceback.format_exc())
            return {"ok": True}, b""

    def _answer(self, req: context.Ask) -> str | None:
        assert self.app is not None  # (opened before the first call is accepted)
        return context.answer(self.app, req)


class _CallFields(TypedDict):
    """A call as a client sends it: `dialects.Call` as a JSON object (`Call._asdict()`)."""

    tool: str
    kind: Kind
    event: str
    session: str | None
    transcript: str | None
    cwd: str | None
    prompt: str | None


def _call_of(body: bytes) -> Call:
    """The call a client sent (ValueError or TypeError when it is not one)."""
    import msgspec

    fields = context.parse(body)
    unknown = sorted(fields.keys() - Call._fields)
    if unknown:
        raise TypeError(f"a hook call has no field {unknown[0]!r}")
    got = Call(**msgspec.convert(fields, _CallFields))  # (ValidationError is a ValueError)
    if got.tool not in DIALECTS:
        raise ValueError(f"no hook dialect {got.tool!r}")
    return got
