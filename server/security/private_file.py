"""Files only this user may change (signing secrets, API key hashes): writing them privately,
and refusing to read one that others could have written."""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

Stamp = tuple[int, int, int, int, int, int]


class FileRefusedError(ValueError):
    """A file the server will not use (the message names it, says why and how to fix it)."""


def stamp(info: os.stat_result) -> Stamp:
    """What tells a changed file: device and inode (a replaced file can keep the old one's
    size and mtime), mtime, size, and mode and owner (a chmod can make a refused file safe)."""
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size, info.st_mode, info.st_uid)


class Followed:
    """When a file that is re-read as it changes is due to be loaded again, and which of its
    failures to say. A fault of the file itself (refused, unparsable: a ValueError) is said
    once, and the file left alone until it changes. A passing fault of the system (EMFILE, EIO,
    a mount gone away: any other OSError) is tried again every time and said once per errno."""

    def __init__(self, path: Path):
        self.path = path
        self.stamp: Stamp | None = None
        self.failed: object = None  # the state of the file when it last failed
        self.passing: int | None = None  # the errno of the passing fault last said

    def due(self) -> object:
        """The file's state (its stamp, or the errno of os.stat) when it is due to be loaded,
        else None: unchanged since it was loaded, or since it failed."""
        try:
            state: object = stamp(os.stat(self.path))  # through a symlink, as it is read
        except OSError as exc:
            state = exc.errno
        return None if state == self.stamp or state == self.failed else state

    def missing(self) -> None:
        """The file is not there: nothing is due until it appears."""
        self.stamp, self.failed = None, errno.ENOENT

    def loaded(self, loaded: Stamp) -> None:
        """The file was loaded, as of `loaded`."""
        self.stamp, self.failed, self.passing = loaded, None, None

    def failure(self, exc: Exception, state: object) -> bool:
        """Note a failed load of the file in `state`; True when the failure is to be said."""
        if not isinstance(exc, OSError):
            self.failed = state
            return True
        said = exc.errno != self.passing
        self.passing = exc.errno
        return said


def check_trusted(path: Path, info: os.stat_result, secret: bool) -> None:
    """Refuse (FileRefusedError) a file that is not a regular file; that neither this user nor
    root owns; that group or others may write (they could put their own content in it); or,
    when it is `secret`, that they may read unless root owns it (a root-owned mount readable by
    the service is how Kubernetes and Docker hand out secrets, and root can read it anyway)."""
    mode, owner, user = stat.S_IMODE(info.st_mode), info.st_uid, os.geteuid()
    if not stat.S_ISREG(info.st_mode):
        raise FileRefusedError(f"{path} is not a regular file")
    if owner not in (user, 0):
        raise FileRefusedError(
            f"{path} is owned by uid {owner}, neither by the user running "
            f"the server (uid {user}) nor by root"
        )
    if mode & 0o022:
        raise FileRefusedError(
            f"{path} is writable by group or others (mode {mode:o}); run chmod go-w {path}"
        )
    if secret and mode & 0o044 and owner != 0:
        raise FileRefusedError(
            f"{path} is readable by group or others (mode {mode:o}); run chmod 600 {path}"
        )


def check_directories(path: Path) -> None:
    """Refuse (FileRefusedError) a file in a directory that another user could change, or
    below one: a directory that neither this user nor root owns, or one that everyone may
    write without the sticky bit (as /tmp has), where anyone could remove or rename the file
    or a symlink to it. Both the directory a path names and the one its target is in count.
    Group-writable directories pass: with umask 002 and a group per user, a clone is one,
    and a file planted by another user fails check_trusted's owner test anyway."""
    user = os.geteuid()
    seen: set[Path] = set()
    for start in (Path(os.path.realpath(path.parent)), Path(os.path.realpath(path)).parent):
        for directory in (start, *start.parents):
            if directory in seen:
                continue
            seen.add(directory)
            try:
                info = os.stat(directory)
            except FileNotFoundError:  # not made yet: write_private makes it, mode 0700
                continue
            mode = stat.S_IMODE(info.st_mode)
            if info.st_uid not in (user, 0):
                raise FileRefusedError(
                    f"{path} is in {directory}, which is owned by uid "
                    f"{info.st_uid}, neither by the user running the server "
                    f"(uid {user}) nor by root"
                )
            if mode & 0o002 and not mode & stat.S_ISVTX:
                raise FileRefusedError(
                    f"{path} is in {directory}, which everyone may write "
                    f"(mode {mode:o}); run chmod o-w {directory}"
                )


def read_trusted(path: Path, secret: bool = True) -> tuple[str, Stamp]:
    """The text of `path` and its stamp(), if check_trusted and check_directories pass. A
    symlink is followed (Kubernetes mounts secrets as links into a directory it swaps); the
    file checks apply to the file read, by fstat on the open descriptor, so nothing can be
    swapped in between. O_NONBLOCK: opening a FIFO must not hang before it is refused."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        # Checked before fdopen: on a directory it fails naming the descriptor, not the file.
        info = os.fstat(fd)
        check_trusted(path, info, secret)
        check_directories(path)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8"), stamp(info)
    except UnicodeDecodeError as exc:
        raise FileRefusedError(f"{path} is not UTF-8 text (byte {exc.start})") from None


def make_private_dirs(directory: Path) -> None:
    """Make `directory` and each missing parent of it mode 0700: Path.mkdir(parents=True)
    gives the parents the umask's mode, so others could list a private file's directories."""
    missing = list(itertools.takewhile(lambda d: not d.exists(), directory.parents))
    # `directory` itself always: mkdir names it when it is a file. exist_ok: a concurrent
    # writer may have made one first.
    for made in (*reversed(missing), directory):
        made.mkdir(mode=0o700, exist_ok=True)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path`'s lock file, .NAME.lock beside it (made mode 0600 and
    kept: removing it would let a waiter lock a file no newcomer sees), for a
    read-modify-replace of `path`: the lock cannot be on `path` itself, which the replace
    swaps for a new inode. O_NOFOLLOW, and a lock file that is not this user's regular file is
    refused: a planted one must not make us create or open a file elsewhere."""
    lock = path.parent / f".{path.name}.lock"
    make_private_dirs(path.parent)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(lock, flags, 0o600)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise FileRefusedError(
            f"{lock} (the lock file of {path}) is a symlink; remove it"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise FileRefusedError(
                f"{lock} (the lock file of {path}) is not a regular file "
                f"of uid {os.geteuid()}; remove it"
            )
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_private(path: Path, text: str, replace: bool = True) -> None:
    """Write `text` to a fresh private temporary file (mkstemp: unpredictable name, O_EXCL,
    mode 0600) beside `path`, then move it into place: os.replace, or os.link when `replace`
    is False so that the first of several concurrent creators wins. A predictable temporary
    name could be a planted symlink that the write would follow."""
    make_private_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)  # fails if another process created it first
        except FileExistsError:
            pass
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
