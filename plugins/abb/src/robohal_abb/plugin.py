"""The robohal_abb plugin's hooks (entry point `abb` in the `robohal` group)."""

from __future__ import annotations

from robohal import hookimpl


@hookimpl
def robohal_models():
    return []


@hookimpl
def robohal_backends():
    return []
