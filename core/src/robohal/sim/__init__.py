"""Simulation: robots without hardware.

- :mod:`.backend`: :class:`SimBackend`, the in-process ``sim://`` robot for any model
- :mod:`.process`: the one launch protocol of the plugins' simulator programs (the ready line
  ``READY <uri>``, ``sim_*`` URI parameters as options) and running them in their own processes
- :mod:`.serial_pty`: a simulated serial device's port, a raw pty a host opens as an adapter
- :mod:`.web_server`: a simulated controller's web server (aiohttp on a thread of its own, TLS
  with a certificate made at start), under the simulated RWS and Desk
"""
