"""Processes for the `pulse kv serve` tests: a local pulse cluster (switch and
two memory nodes, `pulse cluster up` with a temporary config), pulse kv
servers, and a real redis-server, all on loopback.  Every wait has a deadline;
every process is stopped when its context ends.  A missing redis-server or
redis-py is a failure (scripts/setup.sh installs them), never a skip."""
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

try:
    import redis  # python3-redis
except ImportError:
    sys.exit("FAIL: redis-py is missing: run scripts/setup.sh (Debian package python3-redis)")

DEADLINE_S = 60


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, what, timeout=DEADLINE_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    fail("timed out waiting for " + what)


@contextlib.contextmanager
def cluster(pulse, memnodes=2):
    work = tempfile.mkdtemp(prefix="pulse-resp-test-")
    config = os.path.join(work, "cluster.toml")
    nodes = "".join("[[memnode]]\nport = 0\npool_mib = 64\n" for _ in range(memnodes))
    with open(config, "w") as f:
        f.write(f'[cluster]\nname = "resp"\nrun_dir = "{work}/run"\nstart_timeout_ms = 60000\n'
                f'stop_timeout_ms = 3000\n[poll]\nwindow_us = 0\n[switch]\nport = 0\n{nodes}')
    env = dict(os.environ)
    env.pop("PULSE_RUN_DIR", None)
    up = subprocess.run([pulse, "cluster", "up", "--config", config], env=env, capture_output=True,
                        text=True, timeout=120)
    if up.returncode != 0:
        fail("cluster up: " + up.stdout + up.stderr)
    try:
        yield Cluster(pulse, work, config)
    finally:
        subprocess.run([pulse, "cluster", "down", "--config", config], env=env, capture_output=True, timeout=60)
        shutil.rmtree(work, ignore_errors=True)


class Cluster:
    def __init__(self, pulse, work, config):
        self.pulse, self.work, self.config = pulse, work, config
        self.state = os.path.join(work, "run", "resp", "state.json")

    def memnode_pids(self):
        import json
        with open(self.state) as f:
            return [n["pid"] for n in json.load(f)["nodes"] if n.get("role") == "memnode"]


class Server:
    """A process that answers the Redis protocol on 127.0.0.1:port."""

    def __init__(self, argv, log_path, port=None, port_pattern=None):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        if port_pattern:
            def found():
                if self.proc.poll() is not None:
                    fail(f"{argv[0]} exited {self.proc.returncode}: {self.read_log()}")
                m = re.search(port_pattern, self.read_log())
                return m and int(m.group(1))
            self.port = wait_for(found, f"{argv[0]} to listen (log {log_path})")
        else:
            self.port = port
        def answers():
            if self.proc.poll() is not None:
                fail(f"{argv[0]} exited {self.proc.returncode}: {self.read_log()}")
            try:
                return self.client().ping()
            except redis.exceptions.ConnectionError:
                return False
        wait_for(answers, f"{argv[0]} to answer PING on port {self.port}")

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def client(self, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30, **kw)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()


@contextlib.contextmanager
def pulse_server(c, root=None, extra=()):
    root = root or os.path.join(c.work, "resp.root")
    log = tempfile.mktemp(prefix="kv-", suffix=".log", dir=c.work)
    s = Server([c.pulse, "kv", "serve", "--config", c.config, "--listen", "127.0.0.1:0", "--root", root, *extra],
               log, port_pattern=r"listening on 127\.0\.0\.1:(\d+)")
    try:
        yield s
    finally:
        s.stop()


@contextlib.contextmanager
def redis_server():
    exe = shutil.which("redis-server") or ("/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None)
    if exe is None:
        fail("redis-server is missing: run scripts/setup.sh (Debian package redis-server)")
    work = tempfile.mkdtemp(prefix="pulse-resp-redis-")
    port = free_port()
    s = Server([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", work], os.path.join(work, "redis.log"), port=port)
    try:
        yield s
    finally:
        s.stop()
        shutil.rmtree(work, ignore_errors=True)


def tool(name):
    exe = shutil.which(name) or (f"/usr/bin/{name}" if os.path.exists(f"/usr/bin/{name}") else None)
    if exe is None:
        fail(f"{name} is missing: run scripts/setup.sh (Debian package redis-tools)")
    return exe
