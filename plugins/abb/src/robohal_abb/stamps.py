"""Kernel receive timestamps on UDP sockets: when a datagram reached the socket,
not when a busy process got round to reading it.

On loopback the kernel stamps a datagram while the sender's ``sendto`` runs, so
``arrival - send time`` is the peer's answer time alone, free of the reader's own
scheduling delay. Times are wall-clock seconds (``time.time()``'s clock).
"""

from __future__ import annotations

import socket
import struct
import sys
import time

# Python names the option only on some builds; Linux's value is 35 (SO_TIMESTAMPNS_OLD,
# a 64-bit timespec on 64-bit systems).
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform.startswith("linux") else None)
#: ancillary buffer size for one timestamp
ANCILLARY_SIZE = 64


def enable(sock: socket.socket) -> None:
    """Ask the kernel to stamp every datagram ``sock`` receives (where it can)."""
    if SO_TIMESTAMPNS is not None:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)


_TIMESPEC = struct.Struct("qq")  # seconds, nanoseconds
_SOL_SOCKET = socket.SOL_SOCKET


def arrival_time(ancillary: list[tuple[int, int, bytes]]) -> float:
    """The kernel's receive timestamp from ``recvmsg``'s ancillary data, else now."""
    for level, kind, data in ancillary:
        if kind == SO_TIMESTAMPNS and level == _SOL_SOCKET and len(data) >= 16:
            seconds, nanoseconds = _TIMESPEC.unpack_from(data)
            return seconds + nanoseconds * 1e-9
    return time.time()
