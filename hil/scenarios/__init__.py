"""robohal's cross-backend scenarios: the same test program on every HIL cell."""
