"""A TLS connection that one thread reads while other threads write.

OpenSSL's connection object takes one call at a time. A read in one thread (which, on TLS 1.3,
also takes in the server's post-handshake messages, its session tickets) during a write in
another corrupts it: a request or an answer is lost and the link hangs. ``ssl.SSLSocket`` does
not keep the two apart, and a client that reads in a thread of its own while the caller writes
(websockets' synchronous client) meets this: here on about one RobotWare 7 subscription in a hundred,
as a websocket handshake whose answer never came.

:class:`SharedTlsSocket` runs each TLS call under one lock on a non-blocking socket, and waits for
the network outside the lock, so a reader parked on an idle link never holds up a writer. It
offers the socket calls such a client makes (``recv``, ``sendall``, ``settimeout``,
``setsockopt``, ``shutdown``, ``close`` and the addresses).
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time

#: s between looks at whether the socket was closed meanwhile, while a call waits for the network
#: (our choice: a closed socket's reader notices it this soon; an idle link costs a few wake-ups)
WAIT_SLICE = 0.25


def open_tls(host: str, port: int, context: ssl.SSLContext, timeout: float) -> SharedTlsSocket:
    """Connect to ``host:port`` and complete the TLS handshake (trust as ``context`` says) within ``timeout`` s."""
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        tls = context.wrap_socket(sock, server_hostname=host if context.check_hostname else None)
    except BaseException:
        sock.close()
        raise
    return SharedTlsSocket(tls)


class SharedTlsSocket:
    """A connected ``ssl.SSLSocket`` made safe for one reader and any writers (see the module docstring)."""

    def __init__(self, tls: ssl.SSLSocket) -> None:
        self._tls = tls
        self._lock = threading.Lock()
        self._timeout: float | None = None
        tls.setblocking(False)

    def settimeout(self, timeout: float | None) -> None:
        """Seconds a ``recv`` or ``sendall`` may wait (None: no limit), as ``socket.settimeout``."""
        self._timeout = timeout

    def gettimeout(self) -> float | None:
        return self._timeout

    def fileno(self) -> int:
        return self._tls.fileno()

    def getsockname(self):
        return self._tls.getsockname()

    def getpeername(self):
        return self._tls.getpeername()

    def setsockopt(self, *args) -> None:
        self._tls.setsockopt(*args)

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes; b"" at the end of the stream; ``TimeoutError`` past the timeout."""
        deadline = self._deadline()
        while True:
            with self._lock:
                try:
                    return self._tls.recv(size)
                except (ssl.SSLWantReadError, BlockingIOError):  # (plain reads once shut down)
                    writing = False
                except ssl.SSLWantWriteError:
                    writing = True
            self._wait(writing, deadline)

    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        """All of ``data``, or ``TimeoutError`` past the timeout (how much went out is then unknown)."""
        view = memoryview(data).cast("B")
        deadline = self._deadline()
        while view:
            with self._lock:
                try:
                    # the same bytes again after a want: CPython lets OpenSSL take a moved buffer
                    sent = self._tls.send(view)
                except (ssl.SSLWantWriteError, BlockingIOError):
                    writing = True
                except ssl.SSLWantReadError:
                    writing = False
                else:
                    view = view[sent:]
                    continue
            self._wait(writing, deadline)

    def shutdown(self, how: int) -> None:
        with self._lock:
            self._tls.shutdown(how)

    def close(self) -> None:
        with self._lock:
            self._tls.close()

    def _deadline(self) -> float | None:
        return None if self._timeout is None else time.monotonic() + self._timeout

    def _wait(self, writing: bool, deadline: float | None) -> None:
        """Until the socket can be read (or written), at most until ``deadline``."""
        while True:
            fd = self._tls.fileno()
            if fd < 0:
                raise OSError("the TLS socket was closed")
            left = WAIT_SLICE if deadline is None else min(WAIT_SLICE, deadline - time.monotonic())
            if left <= 0:
                raise TimeoutError("timed out")
            watched = [fd]
            try:
                ready = select.select([], watched, [], left) if writing else select.select(watched, [], [], left)
            except (OSError, ValueError):  # closed by another thread during the wait
                raise OSError("the TLS socket was closed") from None
            if ready[0] or ready[1]:
                return
