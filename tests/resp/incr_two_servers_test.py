"""Atomicity across servers: two `pulse kv serve` processes on one cluster
(one keyspace root), several client threads on each hammering a few shared
counters with INCR (plain and pipelined).  The final counts must be exact,
both servers must read the same values, and a server restarted afterwards
still finds them.  Usage: incr_two_servers_test.py PULSE_BINARY"""
import sys
import threading

import harness

KEYS = ["ctr:a", "ctr:b", "ctr:c"]
THREADS_PER_SERVER = 4
ROUNDS = 150


def hammer(server, seed, errors):
    try:
        c = server.client()
        for i in range(ROUNDS):
            key = KEYS[(seed + i) % len(KEYS)]
            if i % 10 == 0:
                pipe = c.pipeline(transaction=False)
                for _ in range(5):
                    pipe.incr(key)
                pipe.execute()
            else:
                c.incr(key)
    except Exception as e:  # noqa: BLE001 - reported below
        errors.append(repr(e))


def expected():
    counts = {k: 0 for k in KEYS}
    for seed in range(2 * THREADS_PER_SERVER):
        for i in range(ROUNDS):
            counts[KEYS[(seed + i) % len(KEYS)]] += 5 if i % 10 == 0 else 1
    return counts


def main():
    pulse = sys.argv[1]
    with harness.cluster(pulse) as c:
        with harness.pulse_server(c) as s1, harness.pulse_server(c) as s2:
            s1.client().flushdb()
            errors, threads = [], []
            for n in range(THREADS_PER_SERVER):
                for k, s in enumerate((s1, s2)):
                    threads.append(threading.Thread(target=hammer, args=(s, 2 * n + k, errors)))
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=240)
                if t.is_alive():
                    harness.fail("a client thread did not finish within 240 s")
            if errors:
                harness.fail(f"{len(errors)} client errors, first: {errors[0]}")
            want = expected()
            for s, name in ((s1, "server 1"), (s2, "server 2")):
                got = {k: int(s.client().get(k)) for k in KEYS}
                if got != want:
                    harness.fail(f"{name} reads {got}, expected {want}")
            info = s2.client().info()
            print(f"exact: {want}; server 2 lock batches {info.get('pulse_lock_batches')}")
        # Both stopped: a new server on the same root finds the counters.
        with harness.pulse_server(c) as s3:
            got = {k: int(s3.client().get(k)) for k in KEYS}
            if got != expected():
                harness.fail(f"after restart: {got}, expected {expected()}")
            if s3.client().dbsize() != len(KEYS):
                harness.fail(f"after restart DBSIZE {s3.client().dbsize()}, expected {len(KEYS)}")
    print("incr across two servers: exact, and durable across a restart")


if __name__ == "__main__":
    main()
