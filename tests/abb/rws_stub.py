"""A bare HTTP server on loopback that answers as a test tells it, for what a simulated controller
does not do: stall in the middle of an answer, ask for the wrong authentication. Every request it
got is kept (method, path, headers), so a test can check what was, or was not, sent."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

Reply = Callable[["Handler"], None]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StubServer

    def log_message(self, *args) -> None:  # quiet
        pass

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append((self.command, self.path, dict(self.headers), body))
        self.server.reply(self)

    do_GET = do_POST = do_PUT = do_DELETE = _any

    def answer(self, status: int, body: bytes = b"", content_type: str = "application/json",
               headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


class StubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, reply: Reply) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.reply = reply
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.release = threading.Event()  # a stalled answer waits for it (set at the end of the test)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def stub_server() -> Iterator[Callable[[Reply], StubServer]]:
    started: list[StubServer] = []

    def start(reply: Reply) -> StubServer:
        server = StubServer(reply)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
