"""The robohal_arduino_planar plugin's hooks (entry point `arduino_planar` in the `robohal` group)."""

from __future__ import annotations

from robohal import hookimpl


@hookimpl
def robohal_models():
    return []


@hookimpl
def robohal_backends():
    return []
