"""Robot models registered by robohal_franka."""

from __future__ import annotations

from robohal import ModelSpec


def model_specs() -> list[ModelSpec]:
    return []
