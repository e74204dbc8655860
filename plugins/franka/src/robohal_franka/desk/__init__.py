"""Franka Desk without the browser: both of Desk's dialects, detected (the Desk API v1 of current
FR3 system images, the older web session of the Panda and earlier FR3 images).

- :class:`DeskSession`: control (taken and given back by robohal's rules), joints, FCI,
  self-tests, recovery, status (:mod:`.session`); :func:`bring_up` / :func:`give_back`
  (:mod:`.bringup`); :func:`open_desk` for a ``franka://`` URI (:mod:`.access`: its Desk, its
  credentials, the certificate to trust);
- the wire: :mod:`.transport` (HTTPS on a context that trusts the robot's certificate alone),
  :mod:`.v1`, :mod:`.web`;
- :mod:`.tokens`: control kept between processes.
"""

from robohal.net.credentials import Credentials

from .bringup import BroughtUp, bring_up, give_back
from .records import ControlHeld, ControlToken, DeskStatus
from .session import DeskSession
from .transport import DeskRefused

__all__ = ["BroughtUp", "ControlHeld", "ControlToken", "Credentials", "DeskRefused", "DeskSession", "DeskStatus",
           "bring_up", "give_back"]
