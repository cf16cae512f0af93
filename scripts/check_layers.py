#!/usr/bin/env python3
"""The layer check: no source of pulse includes a header of a higher layer.

Every folder of src/ and every public header under include/pulse/ belongs to
one layer (LAYERS below; docs/architecture.md "Layers" draws the picture).
A file may include headers of its own layer and of lower ones.  Two layers
on the same level are siblings and may not include each other (the server
and the client know each other only through the wire).  Headers an iterator
build generates (pulse/iterators/<name>.h) belong to the layer whose C file
defines the iterator.

  scripts/check_layers.py [ROOT]     check the tree at ROOT (default: the
                                     repository); exit 1 naming each
                                     violation as file:line, both layers
  scripts/check_layers.py --self-test
                                     run the check on small generated trees,
                                     one clean and some with a deliberate
                                     violation, and fail unless it tells them
                                     apart

Runs as ctest Layers.* and from .ci/run.  A new folder or public header must
be added to LAYERS: the check fails on anything it cannot place.
"""

import os
import re
import subprocess
import sys
import tempfile

# (layer, level, folders of src/, public headers relative to include/pulse/;
# a trailing "/" takes a whole folder).  Lower levels come first.
LAYERS = [
    ("core", 0, ["common", "isa", "engine"],
     ["status.h", "isa.h", "program.h", "assembler.h", "engine.h", "calibration.h", "memory.h",
      "traversal.h", "iterator.h", "far_ptr.h"]),
    ("compiler", 1, ["compiler"], ["compiler.h"]),
    ("net", 2, ["net", "protocol", "node"], ["net.h", "protocol.h", "message_batch.h", "cluster.h"]),
    ("tier", 2, ["tier"], ["tier/"]),
    ("rack", 2, ["rack"], []),
    ("server", 3, ["memnode", "switch"], []),
    ("client", 3, ["client", "ds"], ["client.h", "typed_traversal.h", "ds/"]),
    ("apps", 4, ["apps"], ["apps/"]),
    ("resp", 4, ["resp"], ["resp/"]),
    ("kv", 4, ["kv"], ["kv/"]),
    ("farmem", 4, ["farmem"], ["farmem/"]),
    ("graph", 4, ["graph"], ["graph/"]),
    ("dlrm", 4, ["dlrm"], ["dlrm/"]),
    ("tx", 4, ["tx"], ["tx/"]),
    ("agent", 5, ["agent"], []),
    ("rpc", 5, ["rpc"], ["rpc.h", "rpc_ds.h", "rpc_cache.h", "rpc_apps.h", "rpc_kv.h", "rpc_rrpc.h"]),
    ("cluster", 6, ["cluster"], []),
    ("bench", 7, ["bench"], []),
    ("tools", 8, ["tools"], []),
]

SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".c", ".in")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
ITERATOR_RE = re.compile(r"PULSE_END\(\s*([A-Za-z_][A-Za-z0-9_]*)")


class LayerMap:
    def __init__(self, root):
        self.root = root
        self.level = {name: level for name, level, _, _ in LAYERS}
        self.folder_layer = {}
        self.header_layer = {}
        self.header_dirs = []
        for name, _, folders, headers in LAYERS:
            for f in folders:
                self.folder_layer[f] = name
            for h in headers:
                if h.endswith("/"):
                    self.header_dirs.append((h, name))
                else:
                    self.header_layer[h] = name
        self.iterator_layer = {}  # generated pulse/iterators/<name>.h

    def of_path(self, rel):
        """The layer of a file given relative to the root, or None."""
        parts = rel.split("/")
        if parts[0] == "src" and len(parts) > 2:
            return self.folder_layer.get(parts[1])
        if parts[:2] == ["include", "pulse"] and len(parts) > 2:
            return self.of_public("/".join(parts[2:]))
        return None

    def of_public(self, header):
        """The layer of include/pulse/<header>, or None."""
        if header in self.header_layer:
            return self.header_layer[header]
        for prefix, name in self.header_dirs:
            if header.startswith(prefix):
                return name
        return None


def source_files(root, top):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")


def resolve(layers, rel, bracket, target):
    """(layer, what) of an included header, or (None, None) for one outside
    pulse (system, third-party) and for paths only a -I flag finds."""
    root = layers.root
    if target.startswith("pulse/iterators/") and target.endswith(".h"):
        name = target[len("pulse/iterators/"):-2]
        if name in layers.iterator_layer:
            return layers.iterator_layer[name], target
        return "?", target
    if target.startswith("pulse/"):
        layer = layers.of_public(target[len("pulse/"):])
        return (layer or "?"), target
    if bracket == '"':
        here = os.path.normpath(os.path.join(os.path.dirname(rel), target)).replace(os.sep, "/")
        if os.path.isfile(os.path.join(root, here)):
            return layers.of_path(here) or "?", here
        top = target.split("/")[0]
        if "/" in target and top in layers.folder_layer:
            return layers.folder_layer[top], target
    return None, None


def check(root):
    """The violations of the tree at root, as printable lines."""
    layers = LayerMap(root)
    problems = []
    src = os.path.join(root, "src")
    if os.path.isdir(src):
        for folder in sorted(os.listdir(src)):
            if os.path.isdir(os.path.join(src, folder)) and folder not in layers.folder_layer:
                problems.append(f"src/{folder}/: folder in no layer (add it to LAYERS in scripts/check_layers.py)")
    files = list(source_files(root, "src")) + list(source_files(root, "include/pulse"))
    for rel in files:
        if rel.endswith(".c") and layers.of_path(rel):
            with open(os.path.join(root, rel), errors="replace") as f:
                for m in ITERATOR_RE.finditer(f.read()):
                    layers.iterator_layer[m.group(1)] = layers.of_path(rel)
    for rel in files:
        mine = layers.of_path(rel)
        if mine is None:
            if rel.startswith("include/"):
                problems.append(f"{rel}: public header in no layer (add it to LAYERS in scripts/check_layers.py)")
            continue
        with open(os.path.join(root, rel), errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                theirs, what = resolve(layers, rel, m.group(1), m.group(2))
                if theirs is None or theirs == mine:
                    continue
                if theirs == "?":
                    problems.append(f"{rel}:{lineno}: {mine} layer includes {what}, which is in no layer")
                elif layers.level[theirs] > layers.level[mine]:
                    problems.append(f"{rel}:{lineno}: {mine} layer includes {what} of the higher {theirs} layer")
                elif layers.level[theirs] == layers.level[mine]:
                    problems.append(f"{rel}:{lineno}: {mine} layer includes {what} of the sibling {theirs} layer")
    return problems


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def self_test():
    """The check passes a clean tree and fails each planted violation, naming
    the file, the line and both layers."""
    clean = {
        "include/pulse/status.h": "#pragma once\n",
        "include/pulse/client.h": '#pragma once\n#include "pulse/status.h"\n',
        "src/common/status.cc": '#include "pulse/status.h"\n',
        "src/memnode/server.h": '#pragma once\n#include "pulse/status.h"\n#include <vector>\n',
        "src/rpc/service.h": '#pragma once\n#include "memnode/server.h"\n#include "pulse/iterators/it.h"\n',
        "src/ds/iterators/it.c": "PULSE_END(it, x)\n",
        "src/client/client.cc": '#include "pulse/client.h"\n#include "pulse/iterators/it.h"\n',
    }
    planted = [
        # (file, text, what the report must name)
        ("src/memnode/bad.h", '#pragma once\n\n#include "rpc/service.h"\n',
         ["src/memnode/bad.h:3", "server layer", "higher rpc layer"]),
        ("src/client/bad.cc", '#include "memnode/server.h"\n',
         ["src/client/bad.cc:1", "client layer", "sibling server layer"]),
        ("include/pulse/status.h", '#pragma once\n#include "pulse/client.h"\n',
         ["include/pulse/status.h:2", "core layer", "higher client layer"]),
        ("src/common/bad.cc", '#include "pulse/iterators/it.h"\n',
         ["src/common/bad.cc:1", "core layer", "higher client layer"]),
        ("src/common/bad.cc", '#include "../rpc/service.h"\n',
         ["src/common/bad.cc:1", "core layer", "higher rpc layer"]),
        ("src/newfolder/x.cc", "\n", ["src/newfolder/", "no layer"]),
    ]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "clean")
        for rel, text in clean.items():
            write(base, rel, text)
        found = check(base)
        if found:
            failures.append(f"clean tree reported: {found}")
        for i, (rel, text, must) in enumerate(planted):
            tree = os.path.join(tmp, f"planted{i}")
            for crel, ctext in clean.items():
                write(tree, crel, ctext)
            write(tree, rel, text)
            # Through the command line, as CI runs it: it must exit non-zero.
            run = subprocess.run([sys.executable, os.path.abspath(__file__), tree],
                                 capture_output=True, text=True)
            if run.returncode == 0:
                failures.append(f"{rel}: the check passed a tree with a violation")
            elif not all(m in run.stdout for m in must):
                failures.append(f"{rel}: report does not name {must}: {run.stdout!r}")
    for f in failures:
        print("self-test:", f)
    print(f"self-test: clean tree and {len(planted)} planted violations: "
          f"{'FAILED' if failures else 'each judged right'}")
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) cross the layers (scripts/check_layers.py)")
        return 1
    print("check_layers: every include stays in its layer or below")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
