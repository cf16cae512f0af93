"""Differential test: every command `pulse kv serve` implements, sent by
redis-py to the pulse server and to a real redis-server (started here on a
loopback port), replies compared — plain commands, errors, pipelines, SCAN,
expiry with short TTLs (bounded waits), RESP3 after HELLO 3 (raw socket).
Zero differences allowed.  Usage: differential_test.py PULSE_BINARY"""
import socket
import sys
import time

import harness
import redis

DIFFS = []


def outcome(client, args):
    try:
        return ("ok", client.execute_command(*args))
    except redis.exceptions.ResponseError as e:
        return ("error", str(e))


def check(p, r, args, compare=None):
    a, b = outcome(p, args), outcome(r, args)
    same = compare(a, b) if compare else a == b
    if not same:
        DIFFS.append(f"{args!r}: pulse {a!r} vs redis {b!r}")
    return a, b


def near_ttl(tolerance):
    def cmp(a, b):
        if a[0] != b[0] or a[0] != "ok":
            return a == b
        x, y = a[1], b[1]
        if x < 0 or y < 0:
            return x == y
        return abs(x - y) <= tolerance
    return cmp


STRINGS = [
    ["SET", "k1", "v1"], ["GET", "k1"], ["GET", "missing"], ["SET", "k1", "v2", "GET"],
    ["SET", "k1", "v3", "NX"], ["SET", "k1", "v3", "XX"], ["SET", "new", "x", "XX"], ["GET", "new"],
    ["SET", "new", "x", "NX", "GET"], ["SET", "k1", "v", "NX", "XX"], ["SET", "k1", "v", "EX", "0"],
    ["SET", "k1", "v", "EX", "abc"], ["SET", "k1", "v", "PX", "-5"], ["SET", "k1", "v", "BOGUS"],
    ["SET", "k1", "v", "EX", "10", "PX", "100"], ["SET", "k1", "v", "KEEPTTL", "EX", "5"],
    ["SETNX", "k1", "z"], ["SETNX", "k2", "z"], ["GET", "k2"],
    ["MSET", "a", "1", "b", "2", "c", "3"], ["MGET", "a", "b", "nope", "c"], ["MSET", "a"], ["MSET", "a", "1", "b"],
    ["DEL", "a", "b", "nope"], ["EXISTS", "a", "c", "c", "nope"], ["DEL", "a"],
    ["INCR", "n"], ["INCR", "n"], ["INCRBY", "n", "40"], ["DECR", "n"], ["DECRBY", "n", "-10"], ["GET", "n"],
    ["INCRBY", "n", "x"], ["INCR", "k1"], ["SET", "big", "9223372036854775807"], ["INCR", "big"],
    ["SET", "small", "-9223372036854775808"], ["DECR", "small"], ["DECRBY", "n", "-9223372036854775808"],
    ["SET", "lz", "007"], ["INCR", "lz"], ["SET", "sp", " 1"], ["INCR", "sp"], ["SET", "neg0", "-0"], ["INCR", "neg0"],
    ["INCRBY", "fresh", "-3"],
    ["APPEND", "ap", "hello"], ["APPEND", "ap", " world"], ["GET", "ap"], ["STRLEN", "ap"], ["STRLEN", "nope"],
    ["APPEND", "ap", "x" * 200], ["STRLEN", "ap"], ["GET", "ap"],
    ["GETDEL", "ap"], ["GETDEL", "ap"], ["EXISTS", "ap"],
    ["SET", "bin", b"\x00\r\n\xff" * 50], ["GET", "bin"], ["SET", "", "empty key"], ["GET", ""],
    ["SET", "ev", ""], ["GET", "ev"], ["STRLEN", "ev"],
    ["SET", "large", "L" * 300000], ["GET", "large"], ["APPEND", "large", "tail"], ["STRLEN", "large"],
    ["SET", "large", "short"], ["GET", "large"],
    ["INCR", "k"], ["INCR", "k"], ["DECR", "k"],
]

SERVER = [
    ["PING"], ["PING", "hi"], ["PING", "a", "b"], ["ECHO", "e"], ["ECHO"], ["SELECT", "0"], ["SELECT", "x"],
    ["NOSUCH"], ["NOSUCH", "a", "b"], ["nosuch", "x" * 300], ["GET"], ["GET", "a", "b"], ["SET", "a"],
    ["CONFIG", "GET", "appendonly"], ["TTL"], ["EXPIRE", "a"], ["SCAN"], ["SCAN", "x"],
    ["SCAN", "0", "COUNT", "0"], ["SCAN", "0", "COUNT"], ["SCAN", "0", "BOGUS", "1"],
]

EXPIRY = [
    ["SET", "t", "v"], ["TTL", "t"], ["PTTL", "t"], ["TTL", "nope"], ["PTTL", "nope"],
    ["EXPIRE", "t", "100"], ["TTL", "t"], ["PERSIST", "t"], ["PERSIST", "t"], ["TTL", "t"],
    ["PEXPIRE", "t", "100000"], ["PTTL", "t"], ["EXPIRE", "nope", "10"], ["EXPIRE", "t", "x"],
    ["EXPIRE", "t", "50", "NX"], ["EXPIRE", "t", "50", "XX"], ["EXPIRE", "t", "500", "GT"], ["TTL", "t"],
    ["EXPIRE", "t", "5", "GT"], ["EXPIRE", "t", "400", "LT"], ["TTL", "t"], ["EXPIRE", "t", "5", "NX", "XX"],
    ["EXPIRE", "t", "5", "GT", "LT"], ["EXPIRE", "t", "5", "FOO"],
    ["SET", "t2", "v", "EX", "100"], ["TTL", "t2"], ["SET", "t2", "w"], ["TTL", "t2"],
    ["SET", "t3", "v", "EX", "100"], ["SET", "t3", "w", "KEEPTTL"], ["TTL", "t3"], ["INCR", "cnt"],
    ["EXPIRE", "cnt", "100"], ["INCR", "cnt"], ["TTL", "cnt"], ["APPEND", "t3", "x"], ["TTL", "t3"],
    ["EXPIRE", "t3", "-1"], ["EXISTS", "t3"], ["PEXPIRE", "t2", "0"], ["GET", "t2"],
    ["EXPIRE", "t", "9223372036854775807"],
]


ZSETS = [
    ["ZADD", "z", "1", "a", "2", "b", "3", "c"], ["ZADD", "z", "1", "a"], ["ZADD", "z", "CH", "5", "a", "6", "new"],
    ["ZCARD", "z"], ["ZCARD", "nope"], ["ZSCORE", "z", "a"], ["ZSCORE", "z", "zz"], ["ZSCORE", "nope", "a"],
    ["ZADD", "z", "NX", "9", "a", "9", "nx"], ["ZADD", "z", "XX", "7", "a", "7", "xx"], ["ZSCORE", "z", "a"],
    ["ZADD", "z", "GT", "1", "a"], ["ZADD", "z", "LT", "CH", "1", "a"], ["ZSCORE", "z", "a"],
    ["ZADD", "z", "NX", "XX", "1", "a"], ["ZADD", "z", "GT", "LT", "1", "a"], ["ZADD", "z", "1"],
    ["ZADD", "z", "x", "a"], ["ZADD", "z", "nan", "a"], ["ZADD", "z", "INCR", "1", "a", "2", "b"],
    ["ZADD", "z", "INCR", "2.5", "a"], ["ZADD", "z", "INCR", "1", "fresh"], ["ZADD", "z", "NX", "INCR", "1", "a"],
    ["ZADD", "z", "-inf", "lo", "+inf", "hi", "0", "zero", "-0", "negzero", "2", "b2", "2", "b1"],
    ["ZRANGE", "z", "0", "-1"], ["ZRANGE", "z", "0", "-1", "WITHSCORES"], ["ZRANGE", "z", "2", "4"],
    ["ZRANGE", "z", "-3", "-1", "WITHSCORES"], ["ZRANGE", "z", "5", "2"], ["ZRANGE", "z", "0", "100"],
    ["ZRANGE", "z", "0", "1", "REV"], ["ZRANGE", "z", "1", "5", "BYSCORE"], ["ZRANGE", "z", "(1", "(5", "BYSCORE"],
    ["ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "3"], ["ZRANGE", "z", "5", "1", "BYSCORE", "REV"],
    ["ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "0", "2", "WITHSCORES"],
    ["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"], ["ZRANGE", "z", "x", "1"], ["ZRANGE", "z", "a", "b", "BYSCORE"],
    ["ZRANGE", "nope", "0", "-1"], ["ZRANGE", "z", "0", "1", "BOGUS"],
    ["ZRANGEBYSCORE", "z", "-inf", "+inf"], ["ZRANGEBYSCORE", "z", "2", "(6", "WITHSCORES"],
    ["ZRANGEBYSCORE", "z", "0", "10", "LIMIT", "2", "2"], ["ZRANGEBYSCORE", "z", "0", "10", "LIMIT", "-1", "2"],
    ["ZRANGEBYSCORE", "z", "(", "1"],
    ["ZCOUNT", "z", "-inf", "+inf"], ["ZCOUNT", "z", "(2", "6"], ["ZCOUNT", "z", "x", "1"], ["ZCOUNT", "nope", "0", "1"],
    ["ZRANK", "z", "a"], ["ZRANK", "z", "lo"], ["ZRANK", "z", "hi"], ["ZRANK", "z", "b2"], ["ZRANK", "z", "nope"],
    ["ZREM", "z", "a", "nope", "b"], ["ZREM", "nope", "a"], ["ZCARD", "z"], ["ZRANGE", "z", "0", "-1", "WITHSCORES"],
    ["ZADD", "z", "1", "a"], ["ZRANK", "z", "a"],
    ["ZADD", "fl", "0.1", "a", "1e20", "b", "-2.5e-7", "c", "3", "d"], ["ZSCORE", "fl", "a"], ["ZSCORE", "fl", "b"],
    ["ZRANGE", "fl", "0", "-1", "WITHSCORES"], ["ZADD", "fl", "INCR", "0.2", "a"],
    ["ZADD", "small", "1", "only"], ["ZREM", "small", "only"], ["EXISTS", "small"], ["ZCARD", "small"],
    ["SET", "str", "v"], ["ZADD", "str", "1", "a"], ["ZSCORE", "str", "a"], ["ZRANGE", "str", "0", "1"],
    ["GET", "z"], ["INCR", "z"], ["APPEND", "z", "x"], ["SET", "z", "x", "GET"], ["STRLEN", "z"], ["GETDEL", "z"],
    ["MGET", "z", "str"], ["TYPE", "z"], ["TYPE", "str"], ["TYPE", "nope"], ["EXPIRE", "z", "100"], ["TTL", "z"],
    ["SET", "z", "now a string"], ["GET", "z"], ["ZCARD", "z"],
    ["ZADD", "ties", "1", "c", "1", "a", "1", "b", "1", "d"] + [x for i in range(40) for x in ("1", f"m{i:02}")],
    ["ZRANGE", "ties", "0", "-1"], ["ZRANK", "ties", "m07"], ["ZREM", "ties", "b", "m10"], ["ZRANGE", "ties", "3", "8"],
    ["DEL", "ties"], ["ZCARD", "ties"],
]


def run(cases, p, r):
    for args in cases:
        name = args[0].upper()
        if name == "TTL":
            check(p, r, args, near_ttl(1))
        elif name == "PTTL":
            check(p, r, args, near_ttl(1500))
        else:
            check(p, r, args)


def full_scan(client, **kw):
    keys, cursor, rounds = set(), 0, 0
    while True:
        cursor, page = client.scan(cursor, **kw)
        keys.update(page)
        rounds += 1
        if cursor == 0 or rounds > 100000:
            return keys


def test_scan(p, r):
    for c in (p, r):
        c.mset({f"scan:{i}": i for i in range(300)})
        c.mset({f"other:{i}": i for i in range(20)})
    for kw in ({}, {"count": 1}, {"count": 7}, {"match": "scan:1*"}, {"match": "other:?"},
               {"match": "*:[0-2]"}, {"match": "nomatch*", "count": 1000}, {"_type": "string"}):
        a, b = full_scan(p, **kw), full_scan(r, **kw)
        if a != b:
            DIFFS.append(f"SCAN {kw}: pulse has {len(a)} keys, redis {len(b)}; only pulse {sorted(a - b)[:5]}, "
                         f"only redis {sorted(b - a)[:5]}")


def test_pipeline(p, r):
    def batch(c, transaction):
        pipe = c.pipeline(transaction=transaction)
        pipe.set("pp", "1").incr("pp").incrby("pp", 5).get("pp").mget("pp", "nope").delete("pp")
        pipe.execute_command("NOSUCH").get("pp").set("pp", "x").incr("pp").append("pp", "yz").get("pp")
        for i in range(200):
            pipe.set(f"pipe:{i}", "v" * i).get(f"pipe:{i}")
        return pipe.execute(raise_on_error=False)
    for transaction in (False,):  # MULTI/EXEC is not among the commands
        a, b = batch(p, transaction), batch(r, transaction)
        a = [str(x) if isinstance(x, Exception) else x for x in a]
        b = [str(x) if isinstance(x, Exception) else x for x in b]
        if a != b:
            DIFFS.append(f"pipeline: first difference at {next(i for i in range(len(a)) if a[i] != b[i])}: "
                         f"{[x for x, y in zip(a, b) if x != y][:3]} vs {[y for x, y in zip(a, b) if x != y][:3]}")


def test_expiry_elapses(p, r):
    for c in (p, r):
        c.set("short", "v", px=200)
        c.set("short2", "v")
        c.pexpire("short2", 200)
        c.set("long", "v", ex=100)
    for c, name in ((p, "pulse"), (r, "redis")):
        harness.wait_for(lambda: c.get("short") is None and c.get("short2") is None,
                         f"{name}: keys with a 200 ms TTL to expire", timeout=10)
    run([["GET", "short"], ["EXISTS", "short", "short2"], ["TTL", "short"], ["PTTL", "short2"], ["GET", "long"],
         ["SET", "short", "again", "NX"], ["GET", "short"], ["TTL", "short"], ["INCR", "short2"],
         ["TTL", "short2"], ["DEL", "short"]], p, r)
    if {k for k in full_scan(p) if k.startswith(b"short")} != {k for k in full_scan(r) if k.startswith(b"short")}:
        DIFFS.append("SCAN after expiry differs")


def raw(port, payload, until, timeout=10):
    """Sends payload and reads until the reply ends with `until`."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        data = b""
        while not data.endswith(until):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def test_resp3(p, r):
    # After HELLO 3 a missing key is "_", a map is "%".  Compare what follows
    # the HELLO reply (which names the server and differs).
    cmd = b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*2\r\n$3\r\nGET\r\n$7\r\nnothing\r\n*1\r\n$4\r\nPING\r\n"
    outs = []
    for s in (p, r):
        data = raw(s.port, cmd, b"+PONG\r\n")
        outs.append(data)
    tails = [d[d.index(b"_\r\n"):] if b"_\r\n" in d else d for d in outs]
    if tails[0] != tails[1] or not outs[0].startswith(b"%7\r\n") or b"proto\r\n:3\r\n" not in outs[0]:
        DIFFS.append(f"RESP3: pulse {outs[0][:200]!r} vs redis {outs[1][:200]!r}")
    # Inline commands (telnet), as Redis parses them.
    a, b = (raw(s.port, b"SET inl \"a b\"\r\nGET inl\r\nPING\r\n", b"+PONG\r\n") for s in (p, r))
    if a != b:
        DIFFS.append(f"inline: pulse {a!r} vs redis {b!r}")


def main():
    pulse = sys.argv[1]
    with harness.cluster(pulse) as c, harness.pulse_server(c) as ps, harness.redis_server() as rs:
        p, r = ps.client(), rs.client()
        for x in (p, r):
            x.flushdb()
        # Raw replies (no redis-py reply callbacks): the strictest comparison.
        pr, rr = ps.client(), rs.client()
        pr.response_callbacks.clear()
        rr.response_callbacks.clear()
        run(SERVER, pr, rr)
        run(STRINGS, pr, rr)
        run(EXPIRY, pr, rr)
        run(ZSETS, pr, rr)
        test_pipeline(p, r)
        test_scan(p, r)
        test_expiry_elapses(p, r)
        test_resp3(ps, rs)
        check(p, r, ["DBSIZE"])
        check(p, r, ["FLUSHDB"])
        check(p, r, ["DBSIZE"])
        check(p, r, ["GET", "k1"])
        info = p.info()
        if "pulse_memory_nodes" not in info:
            DIFFS.append("INFO has no pulse section")
        if not ps.alive():
            DIFFS.append("pulse server died: " + ps.read_log())
    if DIFFS:
        print(f"{len(DIFFS)} differences:")
        for d in DIFFS:
            print("  " + d)
        sys.exit(1)
    print("differential: no differences")


if __name__ == "__main__":
    main()
