"""The arm files that ship with the plugin: the MeArm and the TinkerKit Braccio (see
:mod:`robohal.plugins.arm_files` for the format). A user's arm file of the same name stands in
for one of these."""

from pathlib import Path

#: the folder of the bundled arm files
ARMS = Path(__file__).resolve().parent
