"""redis-benchmark against `pulse kv serve`: `-t set,get,incr,mset,zadd -n N
-c 50` (and once pipelined, -P 16) completes with every test reported and no
error reply.  A smoke test: it asserts completion, never speed (the figures
are `pulse bench resp`'s).  Usage: benchmark_smoke_test.py PULSE_BINARY"""
import subprocess
import sys

import harness

TESTS = ["SET", "GET", "INCR", "MSET (10 keys)", "ZADD"]


def main():
    pulse = sys.argv[1]
    bench = harness.tool("redis-benchmark")
    with harness.cluster(pulse) as c, harness.pulse_server(c) as ps:
        for extra in ([], ["-P", "16"]):
            argv = [bench, "-h", "127.0.0.1", "-p", str(ps.port), "-t", "set,get,incr,mset,zadd", "-n", "2000",
                    "-c", "50", "-r", "1000", "--csv", *extra]
            out = subprocess.run(argv, capture_output=True, text=True, timeout=240)
            text = out.stdout + out.stderr
            if out.returncode != 0 or "rror" in text:
                harness.fail(f"{' '.join(argv)} exit {out.returncode}:\n{text[-3000:]}")
            for t in TESTS:
                if f'"{t}"' not in out.stdout:
                    harness.fail(f"{' '.join(argv)}: no result for {t}:\n{out.stdout}")
            print(out.stdout.strip())
        if not ps.alive():
            harness.fail("server died")
        info = ps.client().info()
        print(f"commands {info['total_commands_processed']}, far errors {info['pulse_far_errors']}")
        if info["pulse_far_errors"] != 0:
            harness.fail("far errors during the benchmark")
    print("redis-benchmark: completed without errors")


if __name__ == "__main__":
    main()
