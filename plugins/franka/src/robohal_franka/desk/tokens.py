"""Control tokens kept between processes: ``robohal franka unlock`` takes control and the next
command (``fci on``, ``lock``, a ``franka://`` connect with ``desk_bringup=1``) goes on with it,
as a user of Desk's page keeps control between clicks. One file per robot and user, readable by
its owner only (:mod:`robohal.net.private_files`' rule), under ``$XDG_STATE_HOME/robohal/franka-desk``
(else ``~/.local/state/...``). franky and panda-py keep theirs the same way (a token file per robot).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from robohal.net.private_files import PrivateFileError, check_private, write_private

from .records import ControlToken


def default_folder() -> Path:
    base = os.environ.get("XDG_STATE_HOME")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "robohal" / "franka-desk"


class TokenStore:
    """The stored control token of each (Desk address, user)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or default_folder()

    def __repr__(self) -> str:
        return f"TokenStore({str(self.folder)!r})"

    def _path(self, address: str, user: str) -> Path:
        digest = hashlib.sha256(f"{address}\0{user}".encode()).hexdigest()[:32]  # any user name makes a file name
        return self.folder / f"{digest}.json"

    def load(self, address: str, user: str, dialect: str) -> ControlToken | None:
        """The token stored for this robot and user, or None (also for a file others could read
        or change: not trusted, and not used)."""
        path = self._path(address, user)
        try:
            check_private(path, "the control token file", secret=True)
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, PrivateFileError):
            return None
        if not isinstance(data, dict) or data.get("dialect") != dialect or data.get("address") != address:
            return None
        if not all(isinstance(data.get(key), str) for key in ("id", "owner", "token")):
            return None
        return ControlToken(data["id"], data["owner"], data["token"])

    def save(self, address: str, user: str, dialect: str, token: ControlToken) -> None:
        write_private(self._path(address, user), json.dumps(
            {"address": address, "user": user, "dialect": dialect, "id": token.id, "owner": token.owner,
             "token": token.secret}))

    def forget(self, address: str, user: str) -> None:
        with contextlib.suppress(OSError):
            self._path(address, user).unlink()
