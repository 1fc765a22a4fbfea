"""kazoo's TreeCache side of the cache benchmark (tests/bench/cache_run, issue 16).

    .venv/bin/python tests/bench/drivers/cache_kazoo.py --mode load|latency|resync
        --connect HOST:PORT --path P [--iterations M]

One JSON line on stdout (resync: "LOADED" first, then waits for a line on stdin; TreeCache has
no "resync complete" signal, so only the runner's server-side request count is reported).
"""
import argparse
import json
import queue
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def pct(s, p):
    return s[round((len(s) - 1) * p / 100)] if s else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True)
    ap.add_argument("--connect", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--iterations", type=int, default=500)
    a = ap.parse_args()
    client = KazooClient(hosts=a.connect, timeout=30.0)
    client.start(timeout=15)
    loaded = threading.Event()
    lat = queue.Queue()
    t0 = time.monotonic_ns()

    def listen(ev):
        if ev.event_type == TreeEvent.INITIALIZED:
            loaded.set()
        elif ev.event_type == TreeEvent.NODE_UPDATED and ev.event_data is not None:
            try:
                sent = int(ev.event_data.data.decode())
            except (ValueError, AttributeError):
                return
            lat.put((time.monotonic_ns() - t0 - sent) // 1000)

    before = rss_kb()
    t = time.monotonic()
    cache = TreeCache(client, a.path)
    cache.listen(listen)
    cache.start()
    if not loaded.wait(120):
        sys.exit("kazoo TreeCache not loaded in 120 s")
    ms = (time.monotonic() - t) * 1000

    def count(path):
        kids = cache.get_children(path) or []
        return 1 + sum(count(f"{path}/{k}") for k in kids)

    if a.mode == "load":
        after = rss_kb()
        n = count(a.path)
        out = dict(mode="load", impl="kazoo TreeCache", nodes=n, load_ms=round(ms, 1),
                   rss_delta_kb=after - before, bytes_per_node=(after - before) * 1024 // max(1, n))
    elif a.mode == "latency":
        writer = KazooClient(hosts=a.connect, timeout=30.0)
        writer.start(timeout=15)
        got = []
        for i in range(a.iterations + 50):
            p = f"{a.path}/c{i % 100:02d}"
            writer.set(p, str(time.monotonic_ns() - t0).encode())
            us = lat.get(timeout=60)
            if i >= 50:
                got.append(us)
        writer.stop()
        got.sort()
        out = dict(mode="latency", impl="kazoo TreeCache", n=len(got), p50_us=pct(got, 50), p99_us=pct(got, 99))
    elif a.mode == "resync":
        print("LOADED", flush=True)
        sys.stdin.readline()
        out = dict(mode="resync", impl="kazoo TreeCache", nodes=count(a.path))
    else:
        sys.exit(f"unknown mode {a.mode}")
    cache.close()
    client.stop()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
