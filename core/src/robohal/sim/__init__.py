"""Simulation: robots without hardware.

- :mod:`.backend`: :class:`SimBackend`, the in-process ``sim://`` robot for any model
- :mod:`.process`: the one launch protocol of the plugins' simulator programs (the ready line
  ``READY <uri>``, ``sim_*`` URI parameters as options) and running them in their own processes
"""
