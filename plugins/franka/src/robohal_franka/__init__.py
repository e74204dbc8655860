"""robohal plugin package robohal_franka."""
