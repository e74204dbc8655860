"""The Franka HIL suite, run by `robohal hil` (see BackendSpec.hil_suite)."""
