#!/usr/bin/env python3
"""Reads the module graph of one crate target as `cargo modules dependencies` prints it (DOT, with
functions, types, traits and other crates filtered out, so that every "uses" edge joins two modules
of the crate: what a module imports, as name resolution sees it, and the types its items use) and
fails on an import circle.

A circle is one between sibling subtrees: where a module below `a` uses one below its sibling `b`
and one below `b` uses one below `a`, at any depth. A glob import counts as importing all it
brings in: `use super::*` in two siblings imports each into the other. Between a module and its
own ancestors there is no circle by this count, since a parent composes its children; a module
that uses what an ancestor itself defines is an upward import, listed with --upward.

    hack/import-circles.py [--upward] < graph.dot
"""

import re
import sys
from collections import defaultdict

EDGE = re.compile(r'^\s*"([^"]+)" -> "([^"]+)" \[label="(uses|owns)"')


def is_below(path, ancestor):
    return path.startswith(ancestor + "::")


def split(path):
    return path.split("::")


def circles(graph):
    """Every strongly connected part of more than one node (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def main(argv):
    show_upward = "--upward" in argv
    # siblings[parent][a] = {b: (user, used)}: below `a` something uses something below `b`.
    siblings = defaultdict(lambda: defaultdict(dict))
    upward = []
    for line in sys.stdin:
        match = EDGE.match(line)
        if not match or match.group(3) != "uses":
            continue
        user, used = match.group(1), match.group(2)
        if user == used or is_below(used, user):
            continue
        if is_below(user, used):
            upward.append((user, used))
            continue
        a, b = split(user), split(used)
        common = 0
        while a[common] == b[common]:
            common += 1
        parent = "::".join(a[:common])
        siblings[parent]["::".join(a[: common + 1])].setdefault(
            "::".join(b[: common + 1]), (user, used)
        )
    failed = False
    for parent in sorted(siblings):
        graph = siblings[parent]
        for part in circles(graph):
            failed = True
            print(f"import circle below {parent} between {', '.join(part)}:")
            for a in part:
                for b in part:
                    if b in graph.get(a, {}):
                        user, used = graph[a][b]
                        print(f"  {user} uses {used}")
    if show_upward:
        for user, used in sorted(upward):
            print(f"upward import: {user} uses what {used} defines")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
