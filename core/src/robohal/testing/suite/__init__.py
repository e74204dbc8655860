"""The backend contract suite that `robohal hil` runs against every target."""
