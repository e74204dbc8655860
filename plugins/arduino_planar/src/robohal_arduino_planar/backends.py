"""Backends registered by robohal_arduino_planar."""

from __future__ import annotations

from robohal import BackendSpec


def backend_specs() -> list[BackendSpec]:
    return []
