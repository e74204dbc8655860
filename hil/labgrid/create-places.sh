#!/bin/sh
# Create the labgrid places of hil/cells.example.toml's cells, each matching its exporter group.
#   sh hil/labgrid/create-places.sh COORDINATOR EXPORTER_NAME
# A place is created once; the coordinator keeps it (places.yaml in its working folder).
set -eu
coordinator=${1:?usage: create-places.sh COORDINATOR EXPORTER_NAME}
exporter=${2:?usage: create-places.sh COORDINATOR EXPORTER_NAME}
for cell in franka-sim abb-sim planar-sim so101-sim; do
    labgrid-client -x "$coordinator" -p "robohal-$cell" create
    labgrid-client -x "$coordinator" -p "robohal-$cell" add-match "$exporter/$cell/*"
done
