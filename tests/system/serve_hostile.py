#!/usr/bin/env python3
"""Hostile clients of `stackscope serve` (issue 39), for tests/system/test_serve.sh.

  serve_hostile.py pprof KIND OUT     write a pprof file: bomb (~65 KB of gzip inflating to
                                      64 MiB of empty samples), slow (one sample of 200,000
                                      frames of a 100 KB function name, ~400 bytes gzipped),
                                      heavy (a legitimate but large one: 128 samples of 4,000
                                      frames over 1,000 functions), tiny (one sample)
  serve_hostile.py busy BASE BODY ALEN
                                      POSTs BODY to /api/diff?a_len=ALEN and meanwhile GETs
                                      /api/intervals every 50 ms: prints the POST's status and
                                      time, and the slowest GET's time (ms)
  serve_hostile.py loris BASE         16 clients sending a request one byte a second (each
                                      reconnects when closed), and meanwhile 30 normal
                                      requests 0.1 s apart: prints how many got 200, and
                                      the other statuses
"""
import gzip
import random
import socket
import sys
import threading
import time
import urllib.request


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vfield(num, v):
    return varint(num << 3) + varint(v)


def sample(locs):
    return field(2, field(1, b"".join(varint(x) for x in locs)) + field(2, varint(1)))


def profile(samples, names):
    """samples/count; location i and function i (name names[i-1]) for i in 1..len(names)."""
    out = bytearray(field(1, vfield(1, 1) + vfield(2, 2)))
    out += b"".join(samples)
    for i in range(1, len(names) + 1):
        out += field(4, vfield(1, i) + field(4, vfield(1, i) + vfield(2, 1)))
        out += field(5, vfield(1, i) + vfield(2, 2 + i))
    for s in [b"", b"samples", b"count"] + names:
        out += field(6, s)
    return bytes(out)


def pprof(kind):
    if kind == "bomb":
        return gzip.compress(field(2, b"") * (32 << 20), 9)
    if kind == "slow":
        return gzip.compress(profile([sample([1] * 200000)], [b"f" * 100000]), 9)
    if kind == "heavy":
        rnd = random.Random(1)
        names = [b"function_%05d_" % i + b"x" * 40 for i in range(1000)]
        samples = [sample([rnd.randint(1, 1000) for _ in range(4000)]) for _ in range(128)]
        return gzip.compress(profile(samples, names), 6)
    if kind == "tiny":
        return gzip.compress(profile([sample([1])], [b"f"]))
    raise SystemExit("unknown kind " + kind)


def get(url, timeout=30):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def busy(base, body_path, a_len):
    body = open(body_path, "rb").read()
    result = {}

    def post():
        t0 = time.monotonic()
        req = urllib.request.Request(base + "/api/diff?a_len=" + a_len, data=body, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()
                result["status"] = r.status
        except urllib.error.HTTPError as e:
            result["status"] = e.code
        except OSError:
            result["status"] = 0
        result["ms"] = (time.monotonic() - t0) * 1000

    t = threading.Thread(target=post)
    t.start()
    worst = 0.0
    time.sleep(0.02)
    while t.is_alive() or worst == 0.0:
        t0 = time.monotonic()
        get(base + "/api/intervals")
        worst = max(worst, (time.monotonic() - t0) * 1000)
        time.sleep(0.05)
    t.join()
    print(result.get("status", 0), int(result.get("ms", 0)), int(worst))


def loris(base):
    host, port = base.split("//")[1].split(":")
    port = int(port)
    stop = threading.Event()

    def slow_client():
        while not stop.is_set():
            s = None
            try:
                s = socket.create_connection((host, port), timeout=1)
                for b in b"GET /api/intervals HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 100:
                    if stop.is_set():
                        break
                    s.send(bytes([b]))
                    try:
                        if not s.recv(1024):  # closed by the server
                            break
                    except socket.timeout:
                        pass
            except OSError:
                time.sleep(0.05)
            finally:
                if s:
                    s.close()

    threads = [threading.Thread(target=slow_client) for _ in range(16)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    statuses = []
    for _ in range(30):
        statuses.append(get(base + "/api/intervals", timeout=15))
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join()
    print(statuses.count(200), ",".join(str(s) for s in statuses if s != 200) or "-")


if __name__ == "__main__":
    if sys.argv[1] == "pprof":
        open(sys.argv[3], "wb").write(pprof(sys.argv[2]))
    elif sys.argv[1] == "busy":
        busy(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "loris":
        loris(sys.argv[2])
