"""robohal's per-user files (credentials, known certificates) and the rule that guards them.

They live in ``$XDG_CONFIG_HOME/robohal/`` (by default ``~/.config/robohal/``), as the model files
do; an environment variable per file can name another place (tests, CI). A file that holds
secrets must be readable by its owner only; a file whose contents decide whom robohal trusts must
be writable by its owner only. Either is refused otherwise, with the reason and the fix.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..errors import RobohalError


class PrivateFileError(RobohalError):
    """A per-user file robohal refuses to use as it is; the message says why and how to fix it."""


def config_path(name: str, variable: str, environ: Mapping[str, str] | None = None) -> Path:
    """The path of robohal's file ``name``: ``$variable`` if set, else in the config folder."""
    env = os.environ if environ is None else environ
    named = env.get(variable, "").strip()
    if named:
        return Path(named).expanduser()
    config = env.get("XDG_CONFIG_HOME", "").strip()
    return (Path(config) if config else Path.home() / ".config") / "robohal" / name


def check_private(path: Path, what: str, *, secret: bool) -> None:
    """Refuse ``path`` unless it is a regular file of this user that others cannot write (and,
    for a ``secret`` one, cannot read either). POSIX only: elsewhere file modes say nothing."""
    if sys.platform == "win32":  # pragma: no cover - modes are not permissions there
        return
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise PrivateFileError(f"{what} {path} is not a regular file")
    if info.st_uid != os.getuid():
        raise PrivateFileError(f"{what} {path} belongs to another user (uid {info.st_uid}): robohal uses only"
                               " files of the user it runs as")
    mode = stat.S_IMODE(info.st_mode)
    others = stat.S_IRWXG | stat.S_IRWXO if secret else stat.S_IWGRP | stat.S_IWOTH
    if mode & others:
        who = "read" if secret and mode & (stat.S_IRGRP | stat.S_IROTH) else "changed"
        raise PrivateFileError(
            f"{what} {path} can be {who} by other users (mode {mode:04o}): robohal refuses to use it,"
            f" since it {'holds passwords' if secret else 'decides which controllers robohal trusts'}."
            f" Make it yours alone: chmod 600 {path}")


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable and writable by this user only, replacing the file in
    one step (a reader never sees half of it); the folder is made owner-only if it is new."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:  # mkstemp made it 0600
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside ``path`` (two processes pinning at once lose no entry)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks, one writer at a time is the user's
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
