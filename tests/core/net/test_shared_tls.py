"""SharedTlsSocket against a real TLS 1.3 server on loopback: a reader thread and a writer
thread on one connection, both streams intact; timeouts; a reader woken by close."""

from __future__ import annotations

import hashlib
import socket
import ssl
import threading
from collections.abc import Iterator

import pytest
from robohal.net.shared_tls import open_tls
from robohal.net.tls import pinned_context
from robohal.sim.web_server import self_signed_certificate, server_context

CHUNK = 1000
CHUNKS = 2000  # 2 MB each way


def pattern(index: int) -> bytes:
    return hashlib.sha256(index.to_bytes(4, "big")).digest() * (CHUNK // 32) + b"\0" * (CHUNK % 32)


class LoopbackTlsServer:
    """A TLS server on loopback with a certificate of its own (``der``), serving in a thread."""

    def __init__(self) -> None:
        certificate, key, _ = self_signed_certificate("test", "127.0.0.1")
        self.der = ssl.PEM_cert_to_DER_cert(certificate.decode())
        self.context = server_context(certificate, key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        raise NotImplementedError


class StreamingServer(LoopbackTlsServer):
    """Accepts one TLS client; streams CHUNKS patterned chunks to it while hashing what it sends."""

    def __init__(self) -> None:
        self.received = hashlib.sha256()
        self.received_bytes = 0
        self.stream = True
        self.done = threading.Event()
        super().__init__()

    def _serve(self) -> None:
        # one thread, one call at a time: all of its stream first, then all the client's (the
        # client reads while it writes, so neither side's buffers stay full)
        self.listener.settimeout(10)
        try:
            raw, _ = self.listener.accept()
            with self.context.wrap_socket(raw, server_side=True) as tls:
                tls.settimeout(10)
                if self.stream:
                    for index in range(CHUNKS):
                        tls.sendall(pattern(index))
                while self.received_bytes < CHUNK * CHUNKS:
                    data = tls.recv(65536)
                    if not data:
                        break
                    self.received.update(data)
                    self.received_bytes += len(data)
        except OSError:
            pass
        finally:
            self.done.set()

    def close(self) -> None:
        self.listener.close()
        self.thread.join(10)


@pytest.fixture
def server() -> Iterator[StreamingServer]:
    started = StreamingServer()
    yield started
    started.close()


def test_one_reader_and_one_writer_keep_both_streams_intact(server) -> None:
    tls = open_tls("127.0.0.1", server.port, pinned_context(server.der), timeout=10)
    got = hashlib.sha256()
    expected = hashlib.sha256()
    for index in range(CHUNKS):
        expected.update(pattern(index))
    failure: list[BaseException] = []

    def read() -> None:
        count = 0
        try:
            while count < CHUNK * CHUNKS:
                data = tls.recv(65536)
                assert data, "the stream ended early"
                got.update(data)
                count += len(data)
        except BaseException as exc:  # reported by the main thread
            failure.append(exc)

    tls.settimeout(20)
    reader = threading.Thread(target=read)
    reader.start()
    for index in range(CHUNKS):  # written while the reader reads
        tls.sendall(pattern(index))
    reader.join(30)
    assert not reader.is_alive() and not failure, failure
    assert got.digest() == expected.digest()
    assert server.done.wait(20)
    assert server.received_bytes == CHUNK * CHUNKS and server.received.digest() == expected.digest()
    tls.close()


class AnsweringServer(LoopbackTlsServer):
    """Accepts TLS clients one after another; answers each one's request line with its reverse."""

    def __init__(self) -> None:
        self.running = True
        super().__init__()

    def _serve(self) -> None:
        self.listener.settimeout(0.2)  # a look at running this often
        while self.running:
            try:
                raw, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            try:
                with self.context.wrap_socket(raw, server_side=True) as tls:
                    tls.settimeout(5)
                    request = b""
                    while not request.endswith(b"\n"):
                        data = tls.recv(100)
                        if not data:
                            break
                        request += data
                    tls.sendall(request[-2::-1] + b"\n")
            except OSError:
                continue

    def close(self) -> None:
        self.running = False
        self.thread.join(10)
        self.listener.close()


def test_a_request_written_while_the_reader_waits_gets_its_answer_every_time() -> None:
    """The pattern of a client that reads in a thread of its own (websockets'): its reader is in a
    read when the request goes out, as TLS 1.3's session tickets arrive. On a bare SSLSocket one of
    the first thirty connections lost its answer, in each of three runs."""
    server = AnsweringServer()
    context = pinned_context(server.der)
    try:
        for index in range(300):
            tls = open_tls("127.0.0.1", server.port, context, timeout=10)
            tls.settimeout(5)
            answer: list[bytes | BaseException] = []

            def read(tls=tls, answer=answer) -> None:
                try:
                    answer.append(tls.recv(100))
                except BaseException as exc:  # reported by the main thread
                    answer.append(exc)

            reader = threading.Thread(target=read)
            reader.start()
            request = f"request {index}".encode()
            tls.sendall(request + b"\n")
            reader.join(10)
            tls.close()
            assert answer == [request[::-1] + b"\n"], f"connection {index}: {answer}"
    finally:
        server.close()


def test_a_read_past_its_timeout_raises_and_the_link_still_works(server) -> None:
    server.stream = False  # a silent server: nothing to read
    tls = open_tls("127.0.0.1", server.port, pinned_context(server.der), timeout=10)
    tls.settimeout(0.2)
    with pytest.raises(TimeoutError):
        tls.recv(100)
    tls.settimeout(10)
    tls.sendall(b"x" * 10)  # still writable: the timeout lost nothing
    tls.close()


def test_closing_wakes_a_reader_waiting_on_an_idle_link(server) -> None:
    server.stream = False
    tls = open_tls("127.0.0.1", server.port, pinned_context(server.der), timeout=10)
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(tls.recv(100))
        except OSError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    tls.shutdown(socket.SHUT_RDWR)
    tls.close()
    reader.join(10)
    assert not reader.is_alive()
    assert outcome[0] == b"" or isinstance(outcome[0], OSError)


def test_a_certificate_that_is_not_the_pinned_one_is_refused(server) -> None:
    other, _, _ = self_signed_certificate("other", "127.0.0.1")
    with pytest.raises(ssl.SSLCertVerificationError):
        open_tls("127.0.0.1", server.port, pinned_context(ssl.PEM_cert_to_DER_cert(other.decode())), timeout=10)
