"""Test helpers: a loopback HTTP server (Range, dropped connections) and small archives built in memory."""
from __future__ import annotations

import hashlib
import io
import re
import socketserver
import tarfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _QuickServer(ThreadingHTTPServer):
    """ThreadingHTTPServer without the reverse DNS lookup HTTPServer.server_bind does (slow offline)."""

    def server_bind(self):
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class LoopbackServer:
    """An http.server on 127.0.0.1 in a thread: serves `files`, honours Range, can drop or ignore Range."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.drop_after: dict[str, int] = {}  # path -> bytes sent before closing, once
        self.ignore_range = False
        self.delay = 0.0  # seconds before each response (to overlap concurrent requests)
        state = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                rng = self.headers.get("Range")
                state.requests.append((self.path, rng))
                time.sleep(state.delay)
                body = state.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                start = 0
                match = re.fullmatch(r"bytes=(\d+)-", rng or "")
                if match and not state.ignore_range:
                    start = int(match.group(1))
                    if start >= len(body):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                payload = body[start:]
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                cut = state.drop_after.pop(self.path, None)
                self.wfile.write(payload if cut is None else payload[:cut])
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = _QuickServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, path: str) -> str:
        """Full URL of `path` on this server."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_tgz(members: dict[str, bytes]) -> bytes:
    """A .tar.gz holding `members` in insertion order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def make_zip(members: dict[str, bytes]) -> bytes:
    """A .zip holding `members`."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()
