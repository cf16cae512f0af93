"""Malformed and hostile input never crashes `pulse kv serve` and never
disturbs other connections: random bytes, truncated bulk lengths, a 1 GB
declared length, a huge array count, a client that vanishes mid-request.
Each gets Redis's protocol error (where the request is malformed) and its
connection closed; a connection kept open alongside keeps working.  Then a
dead memory node: commands get an error reply within a bounded time, not a
hang.  Usage: malformed_test.py PULSE_BINARY"""
import os
import random
import signal
import socket
import sys
import time

import harness


def exchange(port, payload, timeout=10):
    """Sends payload; returns what the server sent until it closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        data = b""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            chunk = s.recv(65536)
            if not chunk:
                return data, True
            data += chunk
        return data, False


CASES = [
    (b"*1\r\n$1073741824\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*2\r\n$3\r\nGET\r\n$-7\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$x\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*9999999999\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\n:1\r\n", b"-ERR Protocol error: expected '$', got ':'\r\n"),
    (b"*1\r\n$4\r\nPING\r\n*1\r\n$99999999999\r\n", b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"),
    (b"x" * 70000, b"-ERR Protocol error: too big inline request\r\n"),
]


def main():
    pulse = sys.argv[1]
    rng = random.Random(5)
    with harness.cluster(pulse) as c, harness.pulse_server(c) as ps:
        bystander = ps.client()
        bystander.set("steady", "1")
        for payload, want in CASES:
            got, closed = exchange(ps.port, payload)
            if got != want or not closed:
                harness.fail(f"{payload[:40]!r}: got {got!r} (closed {closed}), expected {want!r} and a close")
            if bystander.incr("steady") < 2:
                harness.fail("bystander connection broken")
        # Random bytes: whatever the reply, the server lives and the
        # bystander works.  Clients that send and vanish, too.
        for trial in range(200):
            junk = bytes(rng.choice(b"*$\r\n0123456789-:+abcPINGSET ") for _ in range(rng.randrange(1, 300)))
            with socket.create_connection(("127.0.0.1", ps.port), timeout=10) as s:
                s.sendall(junk)
                if trial % 2:
                    s.settimeout(0.2)
                    try:
                        s.recv(65536)
                    except socket.timeout:
                        pass
            if not ps.alive():
                harness.fail(f"server died on {junk!r}: {ps.read_log()[-2000:]}")
        # A declared 1 GB bulk followed by its first megabyte, then a vanish:
        # refused at the header, nothing buffered.
        with socket.create_connection(("127.0.0.1", ps.port), timeout=10) as s:
            s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$60000000\r\n" + b"v" * (1 << 20))
        n = int(bystander.get("steady"))
        if n != 1 + len(CASES) or not ps.alive():
            harness.fail(f"bystander reads {n}, server alive {ps.alive()}")
        print(f"malformed input: {len(CASES)} cases with Redis's errors, 200 random inputs, server alive")

        # A dead memory node: an error reply in bounded time.
        for i in range(64):
            bystander.set(f"spread:{i}", "x")
        for pid in c.memnode_pids():
            os.kill(pid, signal.SIGKILL)
        start = time.monotonic()
        try:
            bystander.get("spread:1")
            harness.fail("GET answered with every memory node dead")
        except Exception as e:  # noqa: BLE001 - the error reply is what we want
            if "pulse" not in str(e):
                harness.fail(f"expected a pulse error reply, got {e!r}")
        took = time.monotonic() - start
        if not ps.alive():
            harness.fail("server died with its memory nodes")
        if bystander.ping() is not True:
            harness.fail("PING after the failure")
        print(f"dead memory nodes: error reply after {took:.1f} s, server alive")


if __name__ == "__main__":
    main()
