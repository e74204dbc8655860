"""A robot controller service's user and password.

Where they come from, first found wins:

1. the environment, ``ROBOHAL_<SERVICE>_PASSWORD`` with ``ROBOHAL_<SERVICE>_USER`` (the service's
   name upper-cased, ``-`` as ``_``: ``ROBOHAL_ABB_RWS_PASSWORD``); without a user the default
   user goes with the password;
2. the credentials file, ``$ROBOHAL_CREDENTIALS`` or ``credentials.toml`` in robohal's config
   folder (``~/.config/robohal/``), readable by its owner only (any other file is refused, with
   the reason), one table per service and host (``"HOST:PORT"``, ``"HOST"`` or ``"*"``)::

       [abb-rws."192.168.125.1"]
       user = "Default User"
       password = "robotics"

3. the service's documented defaults, which the caller names (ABB's ``Default User``/``robotics``).

Never from a URI (URIs are logged and shown) or a command line (others see it in ``ps``), and
never logged: :class:`Credentials` shows the user and where it came from, not the password.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .private_files import PrivateFileError, check_private, config_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FILE_VARIABLE = "ROBOHAL_CREDENTIALS"
FILE_NAME = "credentials.toml"
ANY_HOST = "*"


class CredentialsError(PrivateFileError):
    """Credentials that cannot be used as given; the message names where (never the password)."""


@dataclass(frozen=True)
class Credentials:
    """A user and password for one service, and where they came from (``source``)."""

    user: str
    password: str = field(repr=False)
    source: str = ""

    def __str__(self) -> str:
        return f"user {self.user!r} ({self.source})" if self.source else f"user {self.user!r}"


def variable_names(service: str) -> tuple[str, str]:
    """The environment variables of ``service``'s user and password."""
    stem = "ROBOHAL_" + "".join(c if c.isalnum() else "_" for c in service.upper())
    return f"{stem}_USER", f"{stem}_PASSWORD"


def credentials_file(environ: Mapping[str, str] | None = None) -> Path:
    return config_path(FILE_NAME, FILE_VARIABLE, environ)


def credentials_for(service: str, host: str, port: int | None = None, *,
                    defaults: tuple[str, str] | None = None,
                    environ: Mapping[str, str] | None = None) -> Credentials:
    """The credentials for ``service`` at ``host`` (see the module docstring for the order);
    :class:`CredentialsError` when there are none, or a source is unusable."""
    env = os.environ if environ is None else environ
    user_variable, password_variable = variable_names(service)
    if env.get(password_variable) is not None:
        user = env.get(user_variable) or (defaults[0] if defaults else None)
        if not user:
            raise CredentialsError(f"{password_variable} is set but {user_variable} is not, and {service} has no"
                                   " default user: set both")
        return Credentials(user, env[password_variable], f"from {password_variable}")
    if env.get(user_variable):
        raise CredentialsError(f"{user_variable} is set but {password_variable} is not: set both (the password"
                               " only in the environment or an owner-only file, never on a command line)")
    path = credentials_file(env)
    found = _from_file(path, service, host, port)
    if found is not None:
        return found
    if defaults is not None:
        # the source says how to give others: a refusal of the defaults is where a newcomer learns it
        return Credentials(defaults[0], defaults[1], f"the default for {service}, as none are set: {user_variable} and"
                                                     f" {password_variable}, or [{service}.\"{host}\"] in {path}, set them")
    raise CredentialsError(f"no credentials for {service} at {host}: set {user_variable} and {password_variable},"
                           f" or add [{service}.\"{host}\"] with user and password to {path} (chmod 600)")


def _from_file(path: Path, service: str, host: str, port: int | None) -> Credentials | None:
    try:
        check_private(path, "the credentials file", secret=True)
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except PrivateFileError as exc:
        raise CredentialsError(str(exc)) from None
    except OSError as exc:
        raise CredentialsError(f"the credentials file {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message quotes no value, only where the syntax broke
        raise CredentialsError(f"the credentials file {path} is not valid TOML: {exc}") from None
    hosts = data.get(service)
    if hosts is None:
        return None
    if not isinstance(hosts, dict):
        raise CredentialsError(f"{path}: [{service}] must hold one table per host, like [{service}.\"{host}\"]")
    keys = ([f"{host}:{port}"] if port is not None else []) + [host, ANY_HOST]
    for key in keys:
        entry = hosts.get(key)
        if entry is None:
            continue
        where = f"{path}: [{service}.\"{key}\"]"
        if not isinstance(entry, dict) or not isinstance(entry.get("user"), str) \
                or not isinstance(entry.get("password"), str):
            raise CredentialsError(f"{where} needs user = \"...\" and password = \"...\" (text)")
        unknown = sorted(set(entry) - {"user", "password"})
        if unknown:
            raise CredentialsError(f"{where} has unknown key(s) {unknown}; it takes user and password")
        return Credentials(entry["user"], entry["password"], f"from {where}")
    return None
