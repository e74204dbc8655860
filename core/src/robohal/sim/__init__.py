"""Simulation: robots without hardware.

- :mod:`.backend`: :class:`SimBackend`, the in-process ``sim://`` robot for any model
- :mod:`.process`: running a plugin's bundled simulator program in its own process
"""
