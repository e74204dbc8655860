"""The Arduino planar-arm HIL suite, run by `robohal hil` (see BackendSpec.hil_suite)."""
