"""Franka Desk without the browser: both of Desk's dialects, detected (the Desk API v1 of current
FR3 system images, the older web session of the Panda and earlier FR3 images).

- :class:`DeskSession`: control (taken and given back by robohal's rules), joints, FCI,
  self-tests, recovery, status (:mod:`.session`); :func:`bring_up` / :func:`give_back`
  (:mod:`.bringup`);
- the wire: :mod:`.transport` (HTTPS, the robot's certificate pinned), :mod:`.v1`, :mod:`.web`;
- :mod:`.tokens`: control kept between processes.
"""

from .bringup import BroughtUp, bring_up, give_back
from .records import ControlHeld, ControlToken, Credentials, DeskStatus
from .session import DeskSession
from .transport import CertificateRefused, DeskRefused, fingerprint_check

__all__ = ["BroughtUp", "CertificateRefused", "ControlHeld", "ControlToken", "Credentials", "DeskRefused",
           "DeskSession", "DeskStatus", "bring_up", "fingerprint_check", "give_back"]
