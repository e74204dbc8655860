"""The control layer: what stands between a motion and the wire.

- :mod:`.backend`: :class:`Backend`, the template every hardware driver fills in with its wire
- :mod:`.executor`: :class:`MotionExecutor`, the one component that steps a motion, checks,
  records and brakes (in-process backends run it on a thread, Franka in its control process)
- :mod:`.guard`: :class:`SetpointGuard`, the last check before the wire, and the one brake
- :mod:`.lifecycle`: the backend's named states and the transitions between them
"""
