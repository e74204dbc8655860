"""Credentials come from the environment, an owner-only file or the service's defaults; a file
others can read is refused with the reason; the password never shows."""

from __future__ import annotations

import os

import pytest
from robohal.net.credentials import Credentials, CredentialsError, credentials_for, variable_names

DEFAULTS = ("Default User", "robotics")
SECRET = "s3cr3t-pa55"


def write(path, text: str, mode: int) -> None:
    path.write_text(text)
    os.chmod(path, mode)


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """An environment of its own: the credentials file in a temporary folder."""
    return {"ROBOHAL_CREDENTIALS": str(tmp_path / "credentials.toml")}


def test_the_variables_are_named_after_the_service():
    assert variable_names("abb-rws") == ("ROBOHAL_ABB_RWS_USER", "ROBOHAL_ABB_RWS_PASSWORD")


def test_without_environment_or_file_the_documented_defaults_apply(env):
    found = credentials_for("abb-rws", "192.168.125.1", defaults=DEFAULTS, environ=env)
    assert (found.user, found.password) == DEFAULTS
    # a refusal names the source: it says where other credentials go
    assert "default" in found.source
    assert "ROBOHAL_ABB_RWS_USER and ROBOHAL_ABB_RWS_PASSWORD" in str(found) and '[abb-rws."192.168.125.1"]' in str(found)
    assert DEFAULTS[1] not in str(found)


def test_without_defaults_a_missing_credential_says_where_to_put_it(env):
    with pytest.raises(CredentialsError, match="ROBOHAL_DESK_PASSWORD") as caught:
        credentials_for("desk", "172.16.0.2", environ=env)
    assert env["ROBOHAL_CREDENTIALS"] in str(caught.value)


def test_the_environment_wins(env, tmp_path):
    write(tmp_path / "credentials.toml", '[abb-rws."*"]\nuser = "file"\npassword = "x"\n', 0o600)
    env.update(ROBOHAL_ABB_RWS_USER="operator", ROBOHAL_ABB_RWS_PASSWORD=SECRET)
    found = credentials_for("abb-rws", "10.0.0.1", defaults=DEFAULTS, environ=env)
    assert (found.user, found.password) == ("operator", SECRET)
    assert found.source == "from ROBOHAL_ABB_RWS_PASSWORD"


def test_a_password_alone_goes_with_the_default_user(env):
    env["ROBOHAL_ABB_RWS_PASSWORD"] = SECRET
    found = credentials_for("abb-rws", "10.0.0.1", defaults=DEFAULTS, environ=env)
    assert (found.user, found.password) == ("Default User", SECRET)


def test_a_user_without_password_is_refused(env):
    env["ROBOHAL_ABB_RWS_USER"] = "operator"
    with pytest.raises(CredentialsError, match="ROBOHAL_ABB_RWS_PASSWORD is not"):
        credentials_for("abb-rws", "10.0.0.1", defaults=DEFAULTS, environ=env)


def test_an_owner_only_file_is_read_host_first(env, tmp_path):
    write(tmp_path / "credentials.toml",
          '[abb-rws."*"]\nuser = "anyone"\npassword = "a"\n'
          '[abb-rws."10.0.0.1"]\nuser = "cell1"\npassword = "b"\n'
          '[abb-rws."10.0.0.1:8443"]\nuser = "cell1-tls"\npassword = "c"\n', 0o600)
    assert credentials_for("abb-rws", "10.0.0.1", 8443, environ=env).user == "cell1-tls"
    assert credentials_for("abb-rws", "10.0.0.1", 80, environ=env).user == "cell1"
    found = credentials_for("abb-rws", "10.0.0.2", environ=env)
    assert (found.user, found.password) == ("anyone", "a")
    assert str(tmp_path / "credentials.toml") in found.source


@pytest.mark.parametrize(("mode", "who"), [(0o640, "read"), (0o604, "read"), (0o620, "changed")])
def test_a_file_others_can_use_is_refused_with_the_reason(env, tmp_path, mode, who):
    path = tmp_path / "credentials.toml"
    write(path, f'[abb-rws."*"]\nuser = "u"\npassword = "{SECRET}"\n', mode)
    with pytest.raises(CredentialsError, match=f"can be {who} by other users") as caught:
        credentials_for("abb-rws", "10.0.0.1", defaults=DEFAULTS, environ=env)
    assert f"chmod 600 {path}" in str(caught.value)
    assert f"{mode:04o}" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_a_malformed_entry_names_the_table_not_the_password(env, tmp_path):
    write(tmp_path / "credentials.toml", f'[abb-rws."*"]\nuser = "u"\npasswd = "{SECRET}"\n', 0o600)
    with pytest.raises(CredentialsError, match=r'\[abb-rws\."\*"\]') as caught:
        credentials_for("abb-rws", "10.0.0.1", environ=env)
    assert SECRET not in str(caught.value)


def test_the_password_never_shows_in_repr_or_str():
    found = Credentials("operator", SECRET, "from ROBOHAL_ABB_RWS_PASSWORD")
    assert SECRET not in repr(found) and SECRET not in str(found)
    assert "operator" in repr(found) and "operator" in str(found)
