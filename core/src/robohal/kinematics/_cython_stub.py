"""The few names of the ``cython`` module that :mod:`robohal.kinematics._kernels` uses, so
that source runs as plain Python where Cython is not installed (Cython is needed to build
robohal, not to run it). Cython's own pure-Python module does the same when it is
installed; this stand-in exists only because Cython is not a run-time dependency.

Decorators and directives leave a function as it is, ``with cython.nogil:`` does nothing,
and ``cython.declare(cython.double[n])`` gives a list of n zeros.
"""

from __future__ import annotations

from types import SimpleNamespace


class _Directive:
    """``@directive``, ``@directive(argument)`` and ``with directive:``: all leave things as they are."""

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return self

    def __enter__(self) -> _Directive:
        return self

    def __exit__(self, *exc) -> bool:
        return False


class _Type:
    """A C type: ``type[n]`` is an array of n of them (for :func:`_declare`)."""

    def __init__(self, python_type: type) -> None:
        self.python_type = python_type

    def __getitem__(self, size: int) -> tuple[_Type, int]:
        return self, size


def _declare(kind, value=None):
    if isinstance(kind, tuple):  # an array
        item, size = kind
        return [item.python_type()] * size
    return kind.python_type() if value is None else value


_directive = _Directive()
cython = SimpleNamespace(
    compiled=False,
    declare=_declare,
    double=_Type(float),
    int=_Type(int),
    long=_Type(int),
    ulonglong=_Type(int),
    Py_ssize_t=_Type(int),
    bint=_Type(bool),
    **{name: _directive for name in ("cfunc", "ccall", "inline", "nogil", "exceptval", "cdivision", "boundscheck",
                                     "wraparound", "final", "locals", "initializedcheck", "cclass")},
)
