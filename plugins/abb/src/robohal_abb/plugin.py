"""The robohal_abb plugin's hooks (entry point `abb` in the `robohal` group).

Models live in `models.py`, backends in `backends.py`; both are imported only
when robohal asks, so listing plugins stays fast.
"""

from __future__ import annotations

from robohal import hookimpl


@hookimpl
def robohal_models():
    from .models import model_specs

    return model_specs()


@hookimpl
def robohal_backends():
    from .backends import backend_specs

    return backend_specs()
