"""Files only the OS user who runs reos-memory may own: the database and its -wal and -shm, the
hook's log and lock files beside it.

A database may live in a folder others can write (`/tmp`, a shared checkout). There another
user can make the file first, or a symbolic link by its name, before this user's first run:
a database of theirs would let them read and rewrite every memory, a -wal of theirs receive
every write, and a link would turn the hook's log rotation into a truncation of any file this
user can write. So such a file is opened without following a link, and refused when someone
else owns it."""

from __future__ import annotations

import contextlib
import os
import pwd
import stat


class NotOwnFile(PermissionError):
    """A file of reos-memory's is a link, or belongs to another OS user."""


def owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def open_own(path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
    """A descriptor of the regular file `path` (made with `mode` when missing), never through a
    symbolic link; NotOwnFile when another user owns it. A file of ours that others could read
    gets `mode`."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, mode)
    except OSError as exc:
        if os.path.islink(path):
            raise NotOwnFile(f"{path} is a symbolic link: refusing to write through it") from exc
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        os.close(fd)
        raise NotOwnFile(_not_mine(str(path), st.st_uid))
    if stat.S_IMODE(st.st_mode) & ~mode:
        os.fchmod(fd, mode)
    return fd


# the files SQLite keeps beside a database and reads when it opens it (a rollback journal left
# there is played back into the database, even one in WAL mode)
SIDE_FILES = ("-wal", "-shm", "-journal")


def private_dir(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a folder of this user's (never a link), made 0700 if missing and made
    0700 if it was wider: no one else can read it or make files in it, so none of the files in
    it can be another user's links."""
    with contextlib.suppress(FileExistsError, OSError):
        os.mkdir(path, 0o700)
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return False
    if st.st_mode & 0o077:
        try:
            os.chmod(path, 0o700)  # (ours: made wider by hand, or by an older version)
        except OSError:
            return False
    return True


def check_database_owned(path: str) -> None:
    """NotOwnFile when the database `path`, or a file SQLite keeps beside it (SIDE_FILES), belongs
    to another OS user, or such a file is a link. The database itself may be a link of the
    user's: SQLite keeps its side files beside the file the link leads to, checked there."""
    uid = os.getuid()
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode) and st.st_uid != uid:
        raise NotOwnFile(f"{path} is a symbolic link another user made")
    real = os.path.realpath(path)
    for p in (real, *(real + side for side in SIDE_FILES)):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise NotOwnFile(f"{p} is a symbolic link another user could have made")
        if st.st_uid != uid:
            raise NotOwnFile(_not_mine(p, st.st_uid))


def _not_mine(path: str, uid: int) -> str:
    return (
        f"{path} belongs to {owner_name(uid)}, not to {owner_name(os.getuid())} who runs"
        " reos-memory: another user may have made it first; use a file in a folder of your own"
    )
