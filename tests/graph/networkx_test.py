#!/usr/bin/env python3
"""The five graph applications of `pulse graph run` against networkx on the
small real graphs networkx ships (Debian's python3-networkx), plus a
disjoint union of two of them (several components).

What is compared, per graph (undirected; nodes numbered in networkx's node
order; edge weights ignored):
  bfs       depth of every vertex from root 0 (-1 unreachable) equals
            nx.single_source_shortest_path_length; each parent is a neighbour
            one level closer.
  pagerank  every rank within 1e-8 of nx.pagerank(alpha=0.85, weight=None)
            (both run to a 1e-13 tolerance; these graphs have no dangling
            vertices, where Ligra and networkx differ).
  radii     the estimate of v equals max over the sampled sources s that
            reach v of nx's dist(s, v), and is at most v's eccentricity in its
            component; with n <= 64 every vertex is a source, so it equals the
            eccentricity exactly.
  bc        sum over all sources of the single-source dependencies, halved,
            equals nx.betweenness_centrality(normalized=False, weight=None)
            within 1e-9 relative.
  cc        the vertex partition equals nx.connected_components and each
            label is its component's smallest vertex.

usage: networkx_test.py PULSE_BINARY
"""

import json
import os
import subprocess
import sys
import tempfile

import networkx as nx


def graphs():
    out = {
        "karate": nx.karate_club_graph(),
        "les_miserables": nx.les_miserables_graph(),
        "florentine": nx.florentine_families_graph(),
        "davis_southern_women": nx.davis_southern_women_graph(),
    }
    out["karate+florentine"] = nx.disjoint_union(nx.karate_club_graph(), nx.florentine_families_graph())
    return {name: nx.convert_node_labels_to_integers(g) for name, g in out.items()}


def write_adjacency(g, path):
    n = g.number_of_nodes()
    offsets, edges = [], []
    for v in range(n):
        offsets.append(len(edges))
        edges.extend(sorted(u for u in g.neighbors(v) if u != v))
    with open(path, "w") as f:
        f.write("AdjacencyGraph\n%d\n%d\n" % (n, len(edges)))
        f.write("".join("%d\n" % o for o in offsets))
        f.write("".join("%d\n" % e for e in edges))


def run(pulse, graph_file, app, tmp, *extra):
    out = os.path.join(tmp, app + ".json")
    subprocess.run([pulse, "graph", "run", "--app", app, "--graph", graph_file, "-s", "--out", out, *extra],
                   check=True, timeout=120)
    with open(out) as f:
        return json.load(f)


def check(name, g, pulse, tmp):
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append("%s: %s" % (name, what))

    n = g.number_of_nodes()
    path = os.path.join(tmp, name + ".adj")
    write_adjacency(g, path)

    bfs = run(pulse, path, "bfs", tmp, "--root", "0")
    dist = nx.single_source_shortest_path_length(g, 0)
    expect(bfs["labels"] == [dist.get(v, -1) for v in range(n)], "bfs depths differ from networkx")
    for v, p in enumerate(bfs["parents"]):
        if v != 0 and p >= 0:
            expect(g.has_edge(v, p) and bfs["labels"][p] == bfs["labels"][v] - 1, "bfs parent of %d" % v)

    pr = run(pulse, path, "pagerank", tmp, "--iterations", "1000", "--epsilon", "1e-13")
    ref = nx.pagerank(g, alpha=0.85, tol=1e-13, max_iter=1000, weight=None)
    worst = max(abs(pr["values"][v] - ref[v]) for v in range(n))
    expect(worst < 1e-8, "pagerank differs by %g" % worst)

    radii = run(pulse, path, "radii", tmp)
    sources = radii["sources"]
    expect(len(sources) == min(n, 64) and len(set(sources)) == len(sources), "radii sources")
    lengths = {s: nx.single_source_shortest_path_length(g, s) for s in sources}
    for v in range(n):
        reached = [lengths[s][v] for s in sources if v in lengths[s]]
        want = max(reached) if reached else -1
        expect(radii["labels"][v] == want, "radii of %d is %d, want %d" % (v, radii["labels"][v], want))
        ecc = nx.eccentricity(g.subgraph(nx.node_connected_component(g, v)), v)
        expect(radii["labels"][v] <= ecc, "radii of %d above its eccentricity" % v)
        if n <= 64:
            expect(radii["labels"][v] == ecc, "radii of %d is not its eccentricity" % v)

    bc = run(pulse, path, "bc", tmp, "--bc-all-sources")
    ref = nx.betweenness_centrality(g, normalized=False, weight=None)
    for v in range(n):
        got = bc["values"][v] / 2
        expect(abs(got - ref[v]) <= 1e-9 * max(1.0, abs(ref[v])), "bc of %d is %g, want %g" % (v, got, ref[v]))

    cc = run(pulse, path, "cc", tmp)
    for comp in nx.connected_components(g):
        label = min(comp)
        expect(all(cc["labels"][v] == label for v in comp), "cc component of %d" % label)

    print("%-22s n=%3d m=%4d  %s" % (name, n, g.number_of_edges(), "ok" if not failures else "FAILED"))
    return failures


def main():
    pulse = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix="pulse_nx_") as tmp:
        for name, g in graphs().items():
            failures += check(name, g, pulse, tmp)
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
