#!/usr/bin/env python3
"""Fails when modules of one crate depend on each other in a cycle.

Cargo keeps the crates acyclic; inside a crate nothing does. For every folder of modules this
builds the graph of its child modules (an edge a -> b when anything under `a` names anything
under `b` through a `crate::`, `super::` or `self::` path, `use` groups included) and reports
each strongly connected component of more than one module. A module naming its own parent or
child is no edge: that nesting is the tree itself.

Usage: tests/module_cycles.py [ROOT]   (default: the repository)
"""
import pathlib
import re
import sys

PATH_START = re.compile(r"\b(crate|super|self)\s*::")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip(text):
    """Removes comments, string and char literals (keeping line structure irrelevant)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\])'", "' '", text)
    return re.sub(r"//[^\n]*", " ", text)


def parse_tree(text, i, prefix, out):
    """Parses a path (or `{...}` group) at `i` after `prefix`; appends each full path."""
    path = list(prefix)
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i < len(text) and text[i] == "{":
            i += 1
            while True:
                i = parse_tree(text, i, path, out)
                while i < len(text) and text[i].isspace():
                    i += 1
                if i < len(text) and text[i] == ",":
                    i += 1
                    continue
                if i < len(text) and text[i] == "}":
                    return i + 1
                return i
        m = IDENT.match(text, i)
        if not m:
            if text.startswith("*", i):
                i += 1
            out.append(path)
            return i
        path = path + [m.group(0)]
        i = m.end()
        rest = re.match(r"\s*::\s*", text[i:])
        if not rest:
            out.append(path)
            return i
        i += rest.end()


def module_files(src):
    """Maps each module path (tuple) of the crate under `src` to its file."""
    mods = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src).with_suffix("").parts
        if rel[-1] in ("lib", "main", "mod"):
            rel = rel[:-1]
        if rel and rel[0] == "bin":
            continue
        mods[tuple(rel)] = f
    return mods


def targets(module, text, mods):
    """The modules `module`'s text names through crate/super/self paths."""
    found = set()
    for m in PATH_START.finditer(text):
        paths = []
        parse_tree(text, m.start(), [], paths)
        for path in paths:
            base, rest = [], path
            while rest and rest[0] in ("crate", "super", "self"):
                head, rest = rest[0], rest[1:]
                if head == "crate":
                    base = []
                elif head == "super":
                    base = (base or list(module))[:-1]
                elif not base:
                    base = list(module)
            full = tuple(base + rest)
            while full and full not in mods:
                full = full[:-1]
            found.add(full)
    return found


def cycles(src):
    mods = module_files(src)
    edges = {m: targets(m, strip(f.read_text()), mods) for m, f in mods.items()}
    found = []
    for parent in {m[:-1] for m in mods if m}:
        children = sorted({m[len(parent)] for m in mods if len(m) > len(parent) and m[: len(parent)] == parent})
        graph = {c: set() for c in children}
        for m, ts in edges.items():
            if len(m) <= len(parent) or m[: len(parent)] != parent:
                continue
            for t in ts:
                if len(t) > len(parent) and t[: len(parent)] == parent and t[len(parent)] != m[len(parent)]:
                    graph[m[len(parent)]].add(t[len(parent)])
        for scc in strongly_connected(graph):
            if len(scc) > 1:
                found.append(["::".join(parent + (c,)) for c in sorted(scc)])
    return found


def strongly_connected(graph):
    """Tarjan's algorithm, iterative."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    scc = set()
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        scc.add(x)
                        if x == v:
                            break
                    out.append(scc)
            elif w not in index:
                index[w] = low[w] = n
                n += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def crate_sources(root):
    """Each source tree that is a crate: `src/` of every package, and each integration-test
    binary folder (`tests/<name>/main.rs`)."""
    for manifest in sorted(root.rglob("Cargo.toml")):
        if "target" in manifest.parts or any(p.startswith(".") for p in manifest.relative_to(root).parts):
            continue
        package = manifest.parent
        if (package / "src").is_dir():
            yield package / "src"
        for main in sorted((package / "tests").glob("*/main.rs")):
            yield main.parent


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    bad, checked = [], 0
    for src in crate_sources(root):
        checked += 1
        for scc in cycles(src):
            bad.append(f"{src.relative_to(root)}: {' <-> '.join(scc)}")
    for line in bad:
        print(f"module cycle in {line}", file=sys.stderr)
    print(f"tests/module_cycles.py: {checked} source trees, {len(bad)} module cycles", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
