#!/usr/bin/python3
"""OTLP profiles receiver for the system tests and the bench (loopback only).

One port serves both transports; the first bytes of a connection decide:
  - OTLP/HTTP 1.1: POST /v1development/profiles (Content-Encoding gzip or none, Content-Length
    or chunked), answers 200 with an empty ExportProfilesServiceResponse, or the fault's status
    with a google.rpc.Status body (and Retry-After when the fault says so);
  - OTLP/gRPC over h2c with prior knowledge (python3-h2):
    /opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export, 5-byte message
    framing, grpc-encoding gzip; answers a 5-byte empty response and grpc-status 0 in the
    trailers, or a trailers-only error (grpc-status, grpc-message, and for retryable throttling
    a grpc-status-details-bin carrying google.rpc.RetryInfo).

Every request is saved, decompressed (the bare ExportProfilesServiceRequest), as
DIR/req-NNNN.pb, and described by one JSON line in DIR/requests.jsonl: n, arrival time
(time.time()), protocol, path, wire and decompressed sizes, sha1 of the decompressed bytes,
the answer given ("ok", "status:503", "grpc:14", "close", "partial") and malformed=true when the
framing or the compression was wrong. Events are lines too: {"event": "listening"} when the
receiver starts listening, "down" and "up" around a down step; each with its time.

Fault script (--faults SCRIPT, or the content of --control FILE whenever that file changes: the
new script then starts from its first step). Steps are separated by ';' and consumed in order,
one per request unless said otherwise; N*STEP repeats a step N times, *STEP forever; when the
script is exhausted every request is answered ok.
  ok                       answer success
  status:CODE[:RETRY]      HTTP CODE (gRPC: the matching status, e.g. 503 -> 14 UNAVAILABLE,
                           400 -> 3 INVALID_ARGUMENT); RETRY seconds as Retry-After (gRPC:
                           RetryInfo)
  grpc:CODE[:RETRY]        gRPC status CODE (HTTP: 500)
  partial:N                success carrying partial_success{rejected_profiles=N}
  close                    read the request, then close the connection without an answer
  slow:S                   sleep S seconds, then answer ok
  down:T                   (time, not a request) stop listening and drop every connection for T
                           seconds, then listen again on the same port and go on
Example: "2*status:503:1;ok"  "*status:400"  "3*ok;down:10"  "*slow:2".

The port (--port, default 0 = a free one) is printed on the first line of stdout. The receiver
exits by itself after --lifetime seconds (default 300), or on SIGTERM/SIGINT.
"""

import argparse
import base64
import gzip
import hashlib
import json
import os
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import zlib

HTTP_PATH = "/v1development/profiles"
GRPC_PATH = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HTTP_TO_GRPC = {400: 3, 401: 16, 403: 7, 404: 12, 409: 10, 413: 8, 429: 14, 500: 13,
                501: 12, 502: 14, 503: 14, 504: 14}
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           413: "Payload Too Large", 415: "Unsupported Media Type", 429: "Too Many Requests",
           500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
           504: "Gateway Timeout"}


def log(msg):
    sys.stderr.write("otlp_receiver: %s\n" % msg)
    sys.stderr.flush()


# --- protobuf encoding of the few messages we answer with -------------------------------------

def pb_varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_field_varint(num, v):
    return pb_varint(num << 3) + pb_varint(v)


def pb_field_bytes(num, b):
    return pb_varint(num << 3 | 2) + pb_varint(len(b)) + b


def rpc_status(code, message, retry_s=None):
    """google.rpc.Status{1 code, 2 message, 3 details: Any}, RetryInfo in details if asked."""
    out = pb_field_varint(1, code) + pb_field_bytes(2, message.encode())
    if retry_s is not None:
        secs = int(retry_s)
        nanos = int(round((retry_s - secs) * 1e9))
        duration = pb_field_varint(1, secs) + (pb_field_varint(2, nanos) if nanos else b"")
        retry_info = pb_field_bytes(1, duration)
        any_msg = pb_field_bytes(1, b"type.googleapis.com/google.rpc.RetryInfo") + \
            pb_field_bytes(2, retry_info)
        out += pb_field_bytes(3, any_msg)
    return out


def partial_response(rejected, message):
    """ExportProfilesServiceResponse{1 partial_success{1 rejected_profiles, 2 error_message}}."""
    return pb_field_bytes(1, pb_field_varint(1, rejected) + pb_field_bytes(2, message.encode()))


# --- the fault script --------------------------------------------------------------------------

class Step:
    def __init__(self, text):
        self.text = text
        parts = text.split(":")
        self.kind = parts[0]
        self.args = parts[1:]
        kinds = {"ok": 0, "status": (1, 2), "grpc": (1, 2), "partial": 1, "close": 0,
                 "slow": 1, "down": 1}
        if self.kind not in kinds:
            raise ValueError("unknown fault step '%s'" % text)
        want = kinds[self.kind]
        lo, hi = want if isinstance(want, tuple) else (want, want)
        if not lo <= len(self.args) <= hi:
            raise ValueError("fault step '%s' takes %d..%d arguments" % (text, lo, hi))
        if self.kind in ("status", "grpc", "partial"):
            self.code = int(self.args[0])
        self.retry = float(self.args[1]) if len(self.args) > 1 else None
        if self.kind in ("slow", "down"):
            self.seconds = float(self.args[0])


def parse_script(text):
    """[(count or None for forever, Step)]."""
    steps = []
    for item in re.split(r"[;\n]", text or ""):
        item = item.strip()
        if not item or item.startswith("#"):
            continue
        count = 1
        m = re.match(r"^(\d*)\*(.*)$", item)
        if m:
            count = int(m.group(1)) if m.group(1) else None
            item = m.group(2).strip()
        steps.append([count, Step(item)])
    return steps


class Script:
    """The remaining steps, shared by the connection threads (one lock)."""

    def __init__(self, text):
        self.lock = threading.Lock()
        self.steps = parse_script(text)

    def replace(self, text):
        steps = parse_script(text)
        with self.lock:
            self.steps = steps

    def peek_down(self):
        """The down step when it is the current one (then removed), else None."""
        with self.lock:
            if self.steps and self.steps[0][1].kind == "down":
                return self.steps.pop(0)[1]
        return None

    def take(self):
        """The step for one request (ok when the script is exhausted or waiting on down)."""
        with self.lock:
            if not self.steps or self.steps[0][1].kind == "down":
                return Step("ok")
            entry = self.steps[0]
            if entry[0] is not None:
                entry[0] -= 1
                if entry[0] <= 0:
                    self.steps.pop(0)
            return entry[1]


# --- the receiver ------------------------------------------------------------------------------

class Receiver:
    def __init__(self, args):
        self.args = args
        self.dir = args.dir
        os.makedirs(self.dir, exist_ok=True)
        self.script = Script(args.faults)
        self.lock = threading.Lock()
        self.n = 0
        self.inflight = 0
        self.conns = set()
        self.listener = None
        self.port = args.port
        self.stop = threading.Event()
        self.control_sig = None
        self.index = open(os.path.join(self.dir, "requests.jsonl"), "a", buffering=1)

    # listening
    def listen(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.port = s.getsockname()[1]
        self.listener = s

    def go_down(self, seconds):
        log("down for %.1f s" % seconds)
        with self.index_lock():
            self.index.write(json.dumps({"event": "down", "time": time.time(),
                                         "seconds": seconds}) + "\n")
        self.listener.close()
        self.listener = None
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        end = time.monotonic() + seconds
        while not self.stop.is_set() and time.monotonic() < end:
            self.stop.wait(min(0.1, max(0, end - time.monotonic())))
            self.poll_control()
        for _ in range(50):
            try:
                self.listen()
                break
            except OSError:
                time.sleep(0.1)
        else:
            log("cannot listen again on port %d" % self.port)
            self.stop.set()
            return
        with self.index_lock():
            self.index.write(json.dumps({"event": "up", "time": time.time()}) + "\n")
        log("up again")

    def index_lock(self):
        return self.lock

    def poll_control(self):
        path = self.args.control
        if not path:
            return
        try:
            st = os.stat(path)
            with open(path) as f:
                text = f.read()
        except OSError:
            return
        sig = (st.st_mtime_ns, text)
        if sig != self.control_sig:
            if self.control_sig is not None or text.strip():
                try:
                    self.script.replace(text)
                    log("control: script now '%s'" % text.strip())
                except ValueError as e:
                    log("control: %s (ignored)" % e)
            self.control_sig = sig

    def serve(self):
        deadline = time.monotonic() + self.args.lifetime
        while not self.stop.is_set() and time.monotonic() < deadline:
            self.poll_control()
            with self.lock:
                idle = self.inflight == 0
            if idle:
                step = self.script.peek_down()
                if step:
                    self.go_down(step.seconds)
                    continue
            if self.listener is None:
                break
            r, _, _ = select.select([self.listener], [], [], 0.1)
            if not r:
                continue
            try:
                sock, _ = self.listener.accept()
            except OSError:
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.conns.add(sock)
            threading.Thread(target=self.connection, args=(sock,), daemon=True).start()
        if time.monotonic() >= deadline:
            log("lifetime of %.0f s reached, exiting" % self.args.lifetime)

    # recording
    def record(self, proto, path, wire, body, malformed, headers):
        with self.lock:
            self.n += 1
            n = self.n
            self.inflight += 1
        now = time.time()
        name = "req-%04d.pb" % n
        with open(os.path.join(self.dir, name + ".tmp"), "wb") as f:
            f.write(body)
        os.rename(os.path.join(self.dir, name + ".tmp"), os.path.join(self.dir, name))
        step = self.script.take()
        entry = {"n": n, "time": now, "proto": proto, "path": path, "file": name,
                 "wire_bytes": wire, "bytes": len(body),
                 "sha1": hashlib.sha1(body).hexdigest(), "malformed": malformed,
                 "step": step.text, "headers": headers}
        return n, step, entry

    def finish(self, entry, answer):
        entry["answer"] = answer
        entry["answered"] = time.time()
        with self.lock:
            self.index.write(json.dumps(entry) + "\n")
            self.inflight -= 1

    def connection(self, sock):
        try:
            sock.settimeout(self.args.idle_timeout)
            first = b""
            while len(first) < len(H2_PREFACE):
                chunk = sock.recv(len(H2_PREFACE) - len(first))
                if not chunk:
                    return
                first += chunk
                if not H2_PREFACE.startswith(first):
                    break
            if first == H2_PREFACE:
                self.serve_h2(sock, first)
            else:
                self.serve_http1(sock, first)
        except (OSError, ValueError) as e:
            if not self.stop.is_set() and self.listener is not None:
                log("connection: %s" % e)
        finally:
            with self.lock:
                self.conns.discard(sock)
            try:
                sock.close()
            except OSError:
                pass

    # HTTP/1.1
    def serve_http1(self, sock, buf):
        rd = Reader(sock, buf)
        while True:
            line = rd.line()
            if line is None:
                return
            if not line.strip():
                continue
            try:
                method, target, version = line.decode("latin-1").split()
            except ValueError:
                self.http_reply(sock, 400, b"", {"Connection": "close"})
                return
            headers = {}
            while True:
                h = rd.line()
                if h is None:
                    return
                h = h.decode("latin-1").rstrip("\r\n")
                if not h:
                    break
                k, _, v = h.partition(":")
                headers[k.strip().lower()] = v.strip()
            if headers.get("expect", "").lower() == "100-continue":
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            if headers.get("transfer-encoding", "").lower() == "chunked":
                raw = b""
                while True:
                    size_line = rd.line()
                    if size_line is None:
                        return
                    size = int(size_line.split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while True:  # trailers
                            t = rd.line()
                            if t is None or not t.strip():
                                break
                        break
                    raw += rd.exact(size)
                    rd.line()
            else:
                raw = rd.exact(int(headers.get("content-length", "0")))
            if raw is None:
                return
            keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
            if method != "POST" or target.split("?")[0] != HTTP_PATH:
                code = 405 if target.split("?")[0] == HTTP_PATH else 404
                self.http_reply(sock, code, b"", {"Connection": "close"})
                return
            malformed = False
            body = raw
            if headers.get("content-encoding", "").lower() == "gzip":
                try:
                    body = gzip.decompress(raw)
                except (OSError, EOFError, zlib.error):
                    malformed = True
            kept = {k: headers[k] for k in ("content-type", "content-encoding", "user-agent")
                    if k in headers}
            kept.update({k: v for k, v in headers.items() if k.startswith("x-")})
            n, step, entry = self.record("http", target, len(raw), body, malformed, kept)
            answer = self.http_answer(sock, step, malformed)
            self.finish(entry, answer)
            if answer == "close" or not keep:
                return

    def http_answer(self, sock, step, malformed):
        if step.kind == "close":
            return "close"
        if step.kind == "slow":
            time.sleep(step.seconds)
        if malformed:
            body = rpc_status(3, "cannot decompress the body")
            self.http_reply(sock, 400, body, {"Content-Type": "application/x-protobuf"})
            return "status:400"
        if step.kind in ("status", "grpc"):
            code = step.code if step.kind == "status" else 500
            extra = {"Content-Type": "application/x-protobuf"}
            if step.retry is not None:
                extra["Retry-After"] = "%d" % round(step.retry)
            grpc_code = HTTP_TO_GRPC.get(code, 2) if step.kind == "status" else step.code
            self.http_reply(sock, code, rpc_status(grpc_code, "test fault %d" % code), extra)
            return "status:%d" % code
        if step.kind == "partial":
            body = partial_response(step.code, "test partial success")
            self.http_reply(sock, 200, body, {"Content-Type": "application/x-protobuf"})
            return "partial"
        self.http_reply(sock, 200, b"", {"Content-Type": "application/x-protobuf"})
        return "ok"

    def http_reply(self, sock, code, body, extra):
        head = "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n" % (code, REASONS.get(code, "Status"),
                                                           len(body))
        for k, v in extra.items():
            head += "%s: %s\r\n" % (k, v)
        sock.sendall(head.encode() + b"\r\n" + body)

    # gRPC over h2c
    def serve_h2(self, sock, preface):
        import h2.config
        import h2.connection
        import h2.events
        import h2.exceptions

        cfg = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        conn = h2.connection.H2Connection(config=cfg)
        conn.initiate_connection()
        conn.increment_flow_control_window(16 << 20)
        sock.sendall(conn.data_to_send())
        heads, bodies = {}, {}
        data = preface
        while True:
            try:
                events = conn.receive_data(data)
            except h2.exceptions.ProtocolError as e:
                log("h2: %s" % e)
                sock.sendall(conn.data_to_send())
                return
            for ev in events:
                if isinstance(ev, h2.events.RequestReceived):
                    heads[ev.stream_id] = dict(ev.headers)
                    bodies[ev.stream_id] = b""
                elif isinstance(ev, h2.events.DataReceived):
                    bodies[ev.stream_id] = bodies.get(ev.stream_id, b"") + ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    sid = ev.stream_id
                    closed = self.grpc_request(conn, sock, sid, heads.pop(sid, {}),
                                               bodies.pop(sid, b""))
                    if closed:
                        return
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    sock.sendall(conn.data_to_send())
                    return
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
            data = sock.recv(65536)
            if not data:
                return

    def grpc_request(self, conn, sock, sid, head, raw):
        path = head.get(":path", "")
        malformed = False
        body = b""
        if len(raw) < 5:
            malformed = True
        else:
            flag, ln = raw[0], struct.unpack(">I", raw[1:5])[0]
            msg = raw[5:5 + ln]
            if len(raw) != 5 + ln:
                malformed = True
            if flag:
                if head.get("grpc-encoding") != "gzip":
                    malformed = True
                try:
                    msg = gzip.decompress(msg)
                except (OSError, EOFError, zlib.error):
                    malformed = True
            body = msg
        kept = {k: head[k] for k in ("content-type", "te", "grpc-encoding", "user-agent",
                                    "grpc-timeout") if k in head}
        kept.update({k: v for k, v in head.items() if k.startswith("x-")})
        n, step, entry = self.record("grpc", path, len(raw), body, malformed, kept)
        resp_head = [(":status", "200"), ("content-type", "application/grpc")]
        answer = "ok"
        if path != GRPC_PATH:
            code, message, retry = 12, "unknown method", None
        elif malformed:
            code, message, retry = 13, "malformed request", None
        elif step.kind == "close":
            self.finish(entry, "close")
            sock.shutdown(socket.SHUT_RDWR)
            return True
        else:
            if step.kind == "slow":
                time.sleep(step.seconds)
            code, message, retry = 0, "", None
            if step.kind == "status":
                code = HTTP_TO_GRPC.get(step.code, 2)
                message, retry = "test fault %d" % step.code, step.retry
            elif step.kind == "grpc":
                code, message, retry = step.code, "test fault grpc %d" % step.code, step.retry
        if code == 0:
            payload = b""
            if step.kind == "partial":
                payload = partial_response(step.code, "test partial success")
                answer = "partial"
            conn.send_headers(sid, resp_head)
            conn.send_data(sid, b"\0" + struct.pack(">I", len(payload)) + payload)
            conn.send_headers(sid, [("grpc-status", "0")], end_stream=True)
        else:
            status = [("grpc-status", str(code)), ("grpc-message", message.replace(" ", "%20"))]
            if retry is not None:
                det = base64.b64encode(rpc_status(code, message, retry)).decode().rstrip("=")
                status.append(("grpc-status-details-bin", det))
            conn.send_headers(sid, resp_head + status, end_stream=True)  # trailers-only
            answer = "grpc:%d" % code
        self.finish(entry, answer)
        return False


class Reader:
    """Buffered reads from a socket (None at EOF)."""

    def __init__(self, sock, buf):
        self.sock, self.buf = sock, bytes(buf)

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def line(self):
        while b"\n" not in self.buf:
            if len(self.buf) > 65536 or not self.fill():
                return None
        i = self.buf.index(b"\n") + 1
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exact(self, n):
        while len(self.buf) < n:
            if not self.fill():
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="where requests are saved")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--faults", default="", help="fault script (see above)")
    ap.add_argument("--control", help="file whose content, when it changes, replaces the script")
    ap.add_argument("--lifetime", type=float, default=300, help="exit after this many seconds")
    ap.add_argument("--idle-timeout", type=float, default=60,
                    help="close a connection idle this long")
    args = ap.parse_args()
    try:
        parse_script(args.faults)
    except ValueError as e:
        ap.error(str(e))
    rcv = Receiver(args)
    rcv.listen()
    with rcv.index_lock():
        rcv.index.write(json.dumps({"event": "listening", "time": time.time(),
                                    "port": rcv.port}) + "\n")
    sys.stdout.write("%d\n" % rcv.port)
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, lambda *_: rcv.stop.set())
    signal.signal(signal.SIGINT, lambda *_: rcv.stop.set())
    rcv.serve()
    rcv.stop.set()
    rcv.index.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
