"""A HIL target: one robot URI, with its simulator started when it asks for one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..connection import open_robot, resolve_model_name, start_simulator_if_asked
from ..plugins.records import BackendSpec
from ..plugins.registry import Registry, default_registry
from ..robot import Robot
from ..uri import RobotUri, parse_uri
from .safety import CellSafety


@dataclass
class HilTarget:
    """What a HIL test runs against.

    ``requested`` is the URI as given; ``uri`` is the one connected to (for the
    reserved ``sim`` host, the address of the simulator started for this target). Every robot
    connected through :meth:`connect` is held to ``safety`` (the cell's speed factor and
    workspace box); ``identity`` is what the robot said it is when first connected.
    """

    requested: str
    uri: RobotUri
    spec: BackendSpec
    simulator: Any = None
    registry: Registry = field(default_factory=default_registry)
    safety: CellSafety = field(default_factory=CellSafety)
    identity: str = ""

    @classmethod
    def start(cls, requested: str, registry: Registry | None = None, safety: CellSafety | None = None) -> HilTarget:
        registry = registry or default_registry()
        parsed = parse_uri(requested)
        spec = registry.backend_spec(parsed.scheme)
        parsed = parsed.with_params(model=resolve_model_name(parsed, spec))
        parsed, simulator = start_simulator_if_asked(parsed, spec)
        return cls(requested=requested, uri=parsed, spec=spec, simulator=simulator, registry=registry,
                   safety=safety or CellSafety())

    @property
    def simulated(self) -> bool:
        """True for bundled simulators (and the in-process ``sim`` backend)."""
        return self.simulator is not None or self.spec.scheme == "sim"

    @property
    def model_name(self) -> str:
        return str(self.uri.model)

    def has(self, feature: str) -> bool:
        return feature in self.spec.features

    def connect(self, **params: str) -> Robot:
        """A connected :class:`Robot` on this target, with extra URI ``params`` if given, held
        to the target's safety settings (close it, or use ``with``)."""
        uri = self.uri.with_params(**params) if params else self.uri
        robot = self.safety.apply(open_robot(uri, registry=self.registry))
        if not self.identity:
            self.identity = robot.backend.identity or ("bundled simulator" if self.simulated else "")
        return robot

    def preflight(self, points=()) -> None:
        """Check, from where the arm is now, that the suites' motions stay in the workspace box
        (:meth:`CellSafety.preflight`); raises before anything moves."""
        if self.safety.workspace is None:
            return
        with self.connect() as robot:
            self.safety.preflight(robot.model, robot.state.q, points)

    def close(self) -> None:
        if self.simulator is not None:
            self.simulator.stop()
            self.simulator = None

    @contextmanager
    def dedicated_simulators(self) -> Iterator[Callable[..., HilTarget]]:
        """``start(**options)`` starts a simulator of this target's kind and model of its own,
        with simulator options (``loss="0.1"`` is ``sim_loss=0.1``), held to the same safety;
        every one started is stopped when the block ends. For tests that inject faults."""
        started: list[HilTarget] = []

        def start(**sim_options: str) -> HilTarget:
            params = "".join(f"&sim_{key}={value}" for key, value in sim_options.items())
            target = HilTarget.start(f"{self.spec.scheme}://sim?model={self.model_name}{params}", self.registry,
                                     safety=self.safety)
            started.append(target)
            return target

        try:
            yield start
        finally:
            for target in started:
                target.close()

    def __str__(self) -> str:
        return self.requested
