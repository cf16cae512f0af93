"""The fast paths of `pulse kv serve` (docs/resp.md "Batching and
throughput") against a plain dict as the reference:
 - SETs fused with their lookup (same-size overwrite in place; new keys,
   answered with their leaf's split still in flight), asynchronous
   record writes and offloaded index inserts of new keys (enough keys that
   leaves fill and are split, near memory or at the CPU node; a full SCAN
   then visits every key once), values that change size
   (outgrow the inline room, pass the 256-byte asynchronous-write limit,
   shrink back), read back within the same pipeline (a batch reads its own
   writes) and from a second server;
 - restart: the server is killed (SIGKILL, no orderly release) and a new one
   on the same root finds every acknowledged value and the key count;
 - the keyspace lock, kept across batches by a busy server, is handed to a
   second server that asks for it: the second server's commands succeed
   (each waits at most its lock timeout, 3 s, shorter than the lease) while
   the first stays busy, and the counts are exact.
Usage: fast_path_test.py PULSE_BINARY"""
import os
import sys
import threading

import harness
import redis

# Fewer keys at reduced scale (the sanitizer run sets PULSE_TEST_SCALE=0.1,
# where 3000 pipelined new keys outlast a memory node's 2 s write timeout),
# still enough that leaves fill and are split.
KEYS = max(400, int(3000 * float(os.environ.get("PULSE_TEST_SCALE", "1"))))


def value(i, round_):
    # Sizes cycle through: small (inline), 100 bytes (outgrows 64 bytes of
    # room), 300 bytes (over the 256-byte asynchronous write), small again.
    size = (3, 100, 300, 7)[(i + round_) % 4]
    return (f"{i}:{round_}:" * 40)[:size]


def check_all(client, model, what):
    keys = sorted(model)
    got = []
    for start in range(0, len(keys), 500):
        got += client.mget(keys[start:start + 500])
    bad = [(k, g) for k, g in zip(keys, got) if g is None or g.decode() != model[k]]
    if bad:
        k, g = bad[0]
        harness.fail(f"{what}: {len(bad)} keys differ, first {k}: {g!r}, expected {model[k]!r}")
    if client.dbsize() != len(model):
        harness.fail(f"{what}: DBSIZE {client.dbsize()}, expected {len(model)}")


def fast_paths_and_restart(c):
    model = {}
    with harness.pulse_server(c) as s1, harness.pulse_server(c) as s2:
        a = s1.client()
        a.flushdb()
        # New keys, pipelined: one batch holds many plain SETs of new keys.
        pipe = a.pipeline(transaction=False)
        for i in range(KEYS):
            pipe.set(f"fp:{i}", value(i, 0))
            model[f"fp:{i}"] = value(i, 0)
        if not all(pipe.execute()):
            harness.fail("a SET of a new key was refused")
        check_all(s2.client(), model, "new keys, read by the second server")
        # The index's leaf chain after the splits (near memory and at the CPU
        # node): a full SCAN visits every key exactly once.
        scanned = list(s2.client().scan_iter(count=97))
        if sorted(k.decode() for k in scanned) != sorted(model):
            harness.fail(f"SCAN after the new keys: {len(scanned)} keys ({len(set(scanned))} distinct), "
                         f"expected {len(model)}")
        # Overwrites (same size: fused; other sizes: moved or rewritten), each
        # read back in the same pipeline, and an APPEND after them.
        for round_ in (1, 2, 3):
            pipe = a.pipeline(transaction=False)
            expect = []
            for i in range(0, KEYS, 3):
                k = f"fp:{i}"
                pipe.set(k, value(i, round_))
                pipe.get(k)
                expect += [True, value(i, round_).encode()]
                model[k] = value(i, round_)
                if i % 9 == 0:
                    pipe.append(k, "+")
                    model[k] += "+"
                    pipe.get(k)
                    expect += [len(model[k]), model[k].encode()]
            got = pipe.execute()
            if got != expect:
                first = next(n for n, (g, e) in enumerate(zip(got, expect)) if g != e)
                harness.fail(f"round {round_}: reply {first} is {got[first]!r}, expected {expect[first]!r}")
        check_all(s2.client(), model, "after overwrites, read by the second server")
        # Plain SETs of keys no other command of the pipeline names: fused
        # with their lookups where the value fits the record in place.
        pipe = a.pipeline(transaction=False)
        for i in range(1, KEYS, 3):
            k = f"fp:{i}"
            pipe.set(k, f"same:{i}"[:12])
            model[k] = f"same:{i}"[:12]
        if not all(pipe.execute()):
            harness.fail("a plain SET was refused")
        check_all(s2.client(), model, "after plain SETs, read by the second server")
        # Plain small SETs of new keys only, in pipelines of 200: fused, and
        # those whose leaf is full are answered before their split lands
        # (deferred index entries); each next pipeline also reads the keys
        # of the one before, and the second server reads them all.
        prev = []
        for start in range(0, KEYS, 200):
            pipe = a.pipeline(transaction=False)
            batch = [f"fd:{i}" for i in range(start, min(start + 200, KEYS))]
            for k in batch:
                pipe.set(k, k[-6:])
                model[k] = k[-6:]
            for k in prev:
                pipe.get(k)
            got = pipe.execute()
            if got != [True] * len(batch) + [model[k].encode() for k in prev]:
                harness.fail(f"new plain SETs from fd:{start}: {got[:3]}...")
            prev = batch
        check_all(s2.client(), model, "after new plain SETs, read by the second server")
        info = a.info()
        print(f"fused sets {info.get('pulse_fused_sets')}, async writes {info.get('pulse_async_writes')}, "
              f"async inserts {info.get('pulse_async_inserts')}, cpu inserts {info.get('pulse_cpu_inserts')}, "
              f"near-memory splits {info.get('pulse_near_memory_splits')}, "
              f"deferred batches {info.get('pulse_deferred_batches')}, leaf starts {info.get('pulse_leaf_starts')}")
        # pulse_deferred_batches: batches of new keys answered with their
        # leaves' splits in flight, which the next batches and the second
        # server must not miss (check_all above); pulse_leaf_starts: lookups
        # started at a leaf learnt earlier in the same hold of the lock.
        for field in ("pulse_fused_sets", "pulse_async_writes", "pulse_async_inserts", "pulse_cpu_inserts",
                      "pulse_near_memory_splits", "pulse_deferred_batches", "pulse_leaf_starts"):
            if not info.get(field):
                harness.fail(f"{field} is {info.get(field)}: the path under test was not taken")
        if info.get("pulse_lost_after_reply"):
            harness.fail(f"{info['pulse_lost_after_reply']} index entries were lost after their replies")
        # Killed, not stopped: what was acknowledged is in far memory.
        s1.proc.kill()
        s1.proc.wait(timeout=10)
        s2.proc.kill()
        s2.proc.wait(timeout=10)
    with harness.pulse_server(c) as s3:
        # A killed holder keeps the keyspace lock until its lease (5 s) ends:
        # until then commands say the lock timed out.
        def lock_free():
            try:
                return s3.client().ping() and s3.client().exists("fp:0") == 1
            except redis.exceptions.ResponseError as e:
                if "keyspace lock" in str(e):
                    return False
                raise
        harness.wait_for(lock_free, "the killed servers' lease to end")
        check_all(s3.client(), model, "after both servers were killed, a new server")
    print(f"fast paths: {len(model)} keys exact, read by a second server and after a kill and restart")


def lock_handoff(c):
    with harness.pulse_server(c) as busy, harness.pulse_server(c) as other:
        busy.client().delete("busy", "other")
        stop = threading.Event()
        sent = [0]
        errors = []

        def load():
            try:
                cl = busy.client()
                # Bounded: at most 4000 pipelines of 16 INCRs.
                for _ in range(4000):
                    if stop.is_set():
                        return
                    pipe = cl.pipeline(transaction=False)
                    for _ in range(16):
                        pipe.incr("busy")
                    pipe.execute()
                    sent[0] += 16
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=load) for _ in range(3)]
        for t in threads:
            t.start()
        harness.wait_for(lambda: sent[0] >= 320, "the busy server to be under load")
        oc = other.client()
        try:
            for _ in range(50):
                oc.incr("other")
        except Exception as e:  # noqa: BLE001 - the failure under test
            harness.fail(f"the second server's INCR failed while the first was busy: {e!r}")
        still_busy = all(t.is_alive() for t in threads)
        stop.set()
        for t in threads:
            t.join(timeout=240)
            if t.is_alive():
                harness.fail("a load thread did not finish within 240 s")
        if errors:
            harness.fail(f"{len(errors)} load errors, first: {errors[0]}")
        if int(other.client().get("busy")) != sent[0] or int(busy.client().get("other")) != 50:
            harness.fail(f"counts: busy {other.client().get('busy')} (sent {sent[0]}), "
                         f"other {busy.client().get('other')} (sent 50)")
        info = busy.client().info()
        print(f"lock handoff: 50 INCRs on the second server while the first was "
              f"{'still' if still_busy else 'no longer'} busy; first server kept the lock "
              f"{info.get('pulse_lock_kept')} times, yielded {info.get('pulse_lock_yields')} times")


def main():
    pulse = sys.argv[1]
    with harness.cluster(pulse) as c:
        fast_paths_and_restart(c)
        lock_handoff(c)


if __name__ == "__main__":
    main()
