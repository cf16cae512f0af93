#!/usr/bin/env python3
"""Plots of a `pulse bench suite` run, in the style of CHASE Figs. 4-7.

Usage: plot_suite.py DIR   (reads DIR/results.json, writes DIR/*.png)

matrix_<regime>.png   median latency and throughput per application, systems x memory nodes
regimes.png           median latency of every system in each transport regime
study_<name>.png      one plot per sensitivity study (latency and throughput per setting)
pulse_vs_acc.png      pulse vs pulse-acc median latency at 2 and 4 memory nodes (seed 000 Fig. 9)
graph_time.png        graph study: run time of each application per system (seed 003 Fig. 8 style)
graph_traffic.png     graph study: memory-node bytes by class per system and application
kv.png                kv study: throughput, p99 and memory-node CPU per request of each path/system per mix
dlrm.png              dlrm study: throughput and p99 of the offloaded reduction and the one-sided gather
tx.png                tx study: mean and p99 latency and memory-node CPU of the chain against HyperLoop-like
cxl.png               cxl study (a model, seed 000 Fig. 12): slowdown vs local DRAM on CXL memory, with and without pulse
ycsb.png              ycsb study (seed 004 Fig. 14 style): throughput of each system per workload and distribution, 2 racks,
                      and the ablation ladder's built rungs (seed 004 Fig. 18)
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def ok_runs(runs, study):
    return [r for r in runs if r["study"] == study and r["outcome"] == "ok"]


def unique(seq):
    out = []
    for x in seq:
        if x not in out:
            out.append(x)
    return out


def bars(ax, groups, series, value, ylabel, title, log=False):
    """Grouped bars: one group per entry of `groups`, one bar per series."""
    width = 0.8 / max(1, len(series))
    for i, s in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ys = [value(g, s) for g in groups]
        ax.bar(xs, [y if y is not None else 0 for y in ys], width, label=str(s))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([str(g) for g in groups], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    if log:
        ax.set_yscale("log")


def plot_matrix(out, runs):
    matrix = ok_runs(runs, "matrix")
    for regime in unique(r["regime"] for r in matrix):
        rs = [r for r in matrix if r["regime"] == regime]
        apps = unique(r["app"] for r in rs)
        systems = unique(r["system"] for r in rs)
        nodes = sorted(unique(r["memory_nodes"] for r in rs))
        fig, axes = plt.subplots(2, len(apps), figsize=(4.5 * len(apps), 6.5), squeeze=False)
        for col, app in enumerate(apps):
            def get(n, s, key, app=app):
                for r in rs:
                    if r["app"] == app and r["memory_nodes"] == n and r["system"] == s:
                        return r["result"][key]
                return None
            bars(axes[0][col], nodes, systems, lambda n, s: get(n, s, "lat_p50_us"), "median latency (us)",
                 f"{app} ({regime})", log=True)
            bars(axes[1][col], nodes, systems, lambda n, s: get(n, s, "throughput_ops"), "throughput (req/s)",
                 f"{app} ({regime})", log=True)
            axes[1][col].set_xlabel("memory nodes")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"matrix_{regime}.png"), dpi=110)
        plt.close(fig)


def plot_regimes(out, runs):
    matrix = ok_runs(runs, "matrix")
    regimes = unique(r["regime"] for r in matrix)
    if len(regimes) < 2:
        return
    keys = unique((r["app"], r["system"], r["memory_nodes"]) for r in matrix)
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(keys)), 4))

    def get(k, regime):
        for r in matrix:
            if (r["app"], r["system"], r["memory_nodes"]) == k and r["regime"] == regime:
                return r["result"]["lat_p50_us"]
        return None
    bars(ax, keys, regimes, get, "median latency (us)", "transport regimes", log=True)
    ax.set_xticklabels([f"{a}\n{s} x{n}" for a, s, n in keys], fontsize=6, rotation=90)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "regimes.png"), dpi=110)
    plt.close(fig)


def plot_studies(out, runs):
    studies = unique(r["study"] for r in runs if r["study"] not in ("matrix", "pulse_vs_acc"))
    for study in studies:
        rs = ok_runs(runs, study)
        if not rs:
            continue
        labels = [f'{r["app"]} {r["system"]}\n{r["variant"]}' for r in rs]
        fig, axes = plt.subplots(1, 2, figsize=(max(8, 0.9 * len(rs)), 4))
        axes[0].bar(range(len(rs)), [r["result"]["lat_p50_us"] for r in rs])
        axes[0].set_ylabel("median latency (us)")
        axes[1].bar(range(len(rs)), [r["result"]["throughput_ops"] for r in rs])
        axes[1].set_ylabel("throughput (req/s)")
        for ax in axes:
            ax.set_xticks(range(len(rs)))
            ax.set_xticklabels(labels, fontsize=6, rotation=60, ha="right")
            ax.set_title(study, fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"study_{study}.png"), dpi=110)
        plt.close(fig)


def plot_pulse_vs_acc(out, runs):
    rs = [r for r in runs if r["study"] in ("matrix", "pulse_vs_acc") and r["outcome"] == "ok"
          and r["system"] in ("pulse", "pulse-acc") and r["memory_nodes"] >= 2]
    if not rs:
        return
    keys = unique((r["regime"], r["app"], r["memory_nodes"]) for r in rs)

    def get(k, system):
        for r in rs:
            if (r["regime"], r["app"], r["memory_nodes"]) == k and r["system"] == system:
                return r["result"]["lat_p50_us"]
        return None
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(keys)), 4))
    bars(ax, keys, ["pulse", "pulse-acc"], get, "median latency (us)", "pulse vs pulse-acc (Fig. 9)")
    ax.set_xticklabels([f"{g} {a}\nx{n}" for g, a, n in keys], fontsize=6, rotation=60, ha="right")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "pulse_vs_acc.png"), dpi=110)
    plt.close(fig)


GRAPH_APPS = ["bfs", "pagerank", "radii", "bc", "cc"]
GRAPH_CLASSES = ["on_demand", "prefetch", "write_back", "static_load"]


def plot_graph(out, graph):
    """The graph study: run time per system, and traffic by class."""
    if not graph or not graph.get("results"):
        return
    results = [r for r in graph["results"] if "error" not in r]
    systems = unique(r["system"] for r in results)

    def find(system, app):
        for r in results:
            if r["system"] == system and r["app"] == app:
                return r
        return None

    def seconds(app, system):
        r = find(system, app)
        return r["seconds"] if r else None

    fig, ax = plt.subplots(figsize=(9, 4))
    bars(ax, GRAPH_APPS, systems, seconds, "seconds (log)", "graph applications: run time per system", log=True)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "graph_time.png"), dpi=110)
    plt.close(fig)

    far = [s for s in systems if any("memory_node_bytes" in r for r in results if r["system"] == s)]
    if not far:
        return
    fig, axes = plt.subplots(1, len(GRAPH_APPS), figsize=(3 * len(GRAPH_APPS), 3.6), sharey=False)
    for ax, app in zip(axes, GRAPH_APPS):
        bottom = [0.0] * len(far)
        for cls in GRAPH_CLASSES:
            ys = []
            for s in far:
                r = find(s, app)
                ys.append((r.get("memory_node_bytes", {}).get(cls, 0) / 1e6) if r else 0)
            ax.bar(range(len(far)), ys, bottom=bottom, label=cls)
            bottom = [b + y for b, y in zip(bottom, ys)]
        ax.set_xticks(range(len(far)))
        ax.set_xticklabels(far, rotation=45, ha="right", fontsize=7)
        ax.set_title(app, fontsize=9)
        ax.set_ylabel("memory-node MB")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "graph_traffic.png"), dpi=110)
    plt.close(fig)


def plot_app_study(out, study, name, each, systems_key, figures):
    """An issue-15 application study (kv, dlrm, tx): one panel per figure, a
    group per run (its label), a bar per path or system."""
    runs = (study or {}).get("runs") or []
    if not runs:
        return
    labels = [r.get("label", "") for r in runs]
    series = unique(k for r in runs for k in r.get(systems_key, {}))

    def value(key):
        def get(label, system):
            for r in runs:
                if r.get("label") == label:
                    v = r.get(systems_key, {}).get(system, {}).get(key)
                    return v if isinstance(v, (int, float)) else None
            return None
        return get

    fig, axes = plt.subplots(1, len(figures), figsize=(4.5 * len(figures), 3.6))
    for ax, (key, ylabel, log) in zip(axes, figures):
        bars(ax, labels, series, value(key), ylabel, f"{name}: {ylabel}", log=log)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, each), dpi=110)
    plt.close(fig)


def plot_cxl(out, study):
    """The CXL model (issue 16, seed 000 Fig. 12): per node count, a group per
    application (and variant), bars for CXL, CXL+pulse and CXL+pulse with a
    CXL-native request path; slowdown versus local DRAM (the line at 1)."""
    rows = [dict(row, label=run.get("label", "")) for run in (study or {}).get("runs") or []
            for row in run.get("rows", [])]
    if not rows:
        return
    nodes = sorted(unique(r["nodes"] for r in rows))
    series = {"CXL": "cxl_slowdown", "CXL + pulse": "cxl_pulse_slowdown",
              "CXL + pulse, CXL-native requests": "cxl_pulse_native_slowdown"}
    fig, axes = plt.subplots(1, len(nodes), figsize=(5.5 * len(nodes), 3.8), squeeze=False)
    for ax, n in zip(axes[0], nodes):
        rs = [r for r in rows if r["nodes"] == n]
        # A group per (app, variant): "apps cache=1%" -> "cache=1%", "webservice chain=100" -> "chain=100".
        groups = [r["app"] if r["label"] == "apps" else f'{r["app"]}\n{r["label"].split(" ", 1)[-1]}' for r in rs]
        by_group = dict(zip(groups, rs))
        bars(ax, groups, list(series), lambda g, s: by_group[g].get(series[s]),
             "slowdown vs local DRAM", f"CXL model, {n} memory node(s) (a model)")
        ax.axhline(1.0, color="black", linewidth=0.8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "cxl.png"), dpi=110)
    plt.close(fig)


def plot_ycsb(out, study):
    """YCSB on the tiered system and its baselines (issue 16): a group per
    workload and key distribution, a bar per system (log scale: all-local is
    an order of magnitude above the others); a system that cannot run a
    workload has no bar (the report lists why)."""
    runs = (study or {}).get("runs") or []
    if not runs:
        return
    labels = [r.get("label", "") for r in runs]
    systems = unique(s["system"] for r in runs for s in r.get("systems", []))

    def get(label, system):
        for r in runs:
            if r.get("label") == label:
                for s in r.get("systems", []):
                    if s.get("system") == system:
                        return s.get("throughput_ops")
        return None

    ladder = [r for r in ((study or {}).get("ablation") or {}).get("rungs", []) if r.get("built")]
    fig, axes = plt.subplots(1, 2 if ladder else 1, figsize=(1.0 * len(labels) + 3 + (4 if ladder else 0), 3.8),
                             squeeze=False, gridspec_kw={"width_ratios": [3, 1]} if ladder else None)
    ax = axes[0][0]
    bars(ax, labels, systems, get, "operations/s (all clients)", "YCSB, 2 racks: throughput per system", log=True)
    ax.legend(fontsize=7)
    if ladder:
        # The ablation ladder (seed 004 Fig. 18): the built rungs only.
        lx = axes[0][1]
        lx.bar(range(len(ladder)), [r.get("throughput_ops", 0) for r in ladder])
        lx.set_xticks(range(len(ladder)))
        lx.set_xticklabels([r["rung"] for r in ladder], fontsize=7, rotation=20)
        lx.set_ylabel("operations/s")
        lx.set_title("ablation, C zipfian, tiered", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "ycsb.png"), dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    runs = results["runs"]
    plot_matrix(out, runs)
    plot_regimes(out, runs)
    plot_studies(out, runs)
    plot_pulse_vs_acc(out, runs)
    plot_graph(out, results.get("graph"))
    plot_app_study(out, results.get("kv"), "kv", "kv.png", "paths",
                   [("throughput_ops", "requests/s", False), ("p99_us", "p99 us", True),
                    ("mn_cpu_us_per_op", "memory-node CPU us/request", False)])
    plot_app_study(out, results.get("dlrm"), "dlrm", "dlrm.png", "systems",
                   [("throughput_qps", "queries/s", False), ("lat_p99_us", "p99 us", True),
                    ("mn_cpu_us_per_query", "memory-node CPU us/query", False)])
    plot_app_study(out, results.get("tx"), "tx", "tx.png", "systems",
                   [("mean_us", "mean us", False), ("p99_us", "p99 us", True),
                    ("mn_cpu_us_per_tx", "memory-node CPU us/tx", False)])
    plot_cxl(out, results.get("cxl"))
    plot_ycsb(out, results.get("ycsb"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
