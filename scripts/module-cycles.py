#!/usr/bin/env python3
"""Finds import cycles among the modules of every crate of the workspace; `make lint` runs it.

A module is a source file (`src/a/b.rs` or `src/a/b/mod.rs` is `a::b`). Module A imports B
when A names an item of B through `crate::`, `super::` or `self::` (in a `use` or a path). A
name that `lib.rs` or a `mod.rs` re-exports with `pub use` (a glob too) counts as an import of
the module it comes from (the parent's `pub use` itself is no import); a glob of a module
(`use super::*`) counts as an import of each of its items (its own or re-exported) that the
importing module names. A module's unit tests (`#[cfg(test)]` to the end of the file) are left out.
Cycles are the strongly connected components of more than one module (Tarjan 1972), each
printed with the names that tie it; the exit code is 1 when there is one.

Usage: scripts/module-cycles.py [ROOT]   (default: the repository this script is in)
"""

import functools
import re
import sys
from pathlib import Path

# Comments, strings (raw ones too) and character literals, which the paths are not looked for in.
LEXEMES = re.compile(
    r"//[^\n]*|/\*.*?\*/|r(#*)\"[\s\S]*?\"\1|b?\"(?:\\.|[^\"\\])*\"|b?'(?:\\.|[^'\\])'", re.S
)
DEFINED = re.compile(r"(?m)^pub(?:\([^)]*\))?\s+(?:struct|enum|fn|const|static|type|trait)\s+(\w+)")
GLOB = re.compile(r"\buse\s+(crate|super|self)((?:::\w+)*)::\*")
PATH = re.compile(r"\b(crate|super|self)((?:::\w+)*)(?:::\{([^}]*)\})?")


def modules_of(src):
    """Module path (tuple) -> file, for one crate's `src`."""
    mods = {}
    for f in src.rglob("*.rs"):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
            parts = parts[:-1]
        mods[tuple(parts)] = f
    return mods


@functools.lru_cache(maxsize=None)
def code_of(f):
    text = f.read_text()
    i = text.find("#[cfg(test)]")
    text = text if i < 0 else text[:i]
    return LEXEMES.sub(lambda t: " " if t.group(0).startswith("/") else '""', text)


def reexports(mods):
    """(module, name) -> module it comes from, for `pub use` in lib.rs and mod.rs files."""
    out = {}
    for m, f in mods.items():
        if f.name not in ("lib.rs", "mod.rs", "main.rs"):
            continue
        for use in re.findall(r"pub(?:\([^)]*\))? use ([^;]+);", code_of(f)):
            use = re.sub(r"\s+", " ", use).replace(" ", "") if " as " not in use else use
            if use.endswith("::*"):
                source = resolve(mods, m, use[:-3].split("::"))
                if source is not None:
                    for n in DEFINED.findall(code_of(mods[source])):
                        out.setdefault((m, n), source)
                continue
            base, _, names = use.partition("::{")
            names = names.rstrip("}").split(",") if names else [base.split("::")[-1]]
            base = base if _ else "::".join(base.split("::")[:-1])
            target = resolve(mods, m, base.split("::")) if base else None
            for n in names:
                n = n.split(" as ")[-1].strip()
                if target is not None and n and n != "self":
                    out[(m, n)] = target
    return out


def resolve(mods, here, words):
    """The module a path of `words` starting at module `here` names (the longest prefix)."""
    if not words:
        return None
    if words[0] == "crate":
        at, words = (), words[1:]
    elif words[0] in ("super", "self"):
        at = here
        while words and words[0] in ("super", "self"):
            at = at[:-1] if words[0] == "super" else at
            words = words[1:]
    else:
        at = here
    best = at if at in mods else None
    for i in range(len(words)):
        if at + tuple(words[: i + 1]) in mods:
            best = at + tuple(words[: i + 1])
    return best


def graph_of(mods):
    """Module -> {module it imports: the names it takes from it}."""
    exports = reexports(mods)
    edges = {m: {} for m in mods}
    for m, f in mods.items():
        code = code_of(f)
        if f.name in ("lib.rs", "mod.rs"):
            # A parent's re-exports are its public face, not imports (`exports` follows them).
            code = re.sub(r"pub(?:\([^)]*\))? use [^;]+;", "", code)
        # (`pub(crate)`, `self.x`: no path.)
        paths = [([r] + [w for w in rest.split("::") if w], g) for r, rest, g in PATH.findall(code) if rest or g]
        # Paths relative to the module: a child module named first (`use child::X`, `child::f`).
        for first, rest in re.findall(r"(?<![:\w])(\w+)((?:::\w+)+)", code):
            if m + (first,) in mods:
                paths.append((["self", first] + rest.strip(":").split("::"), ""))
        # Globs (`use super::*`): an import of each item of that module (its own or re-exported)
        # that the code names.
        for r, rest in GLOB.findall(code):
            words = [r] + [w for w in rest.split("::") if w]
            source = resolve(mods, m, words)
            if source is None:
                continue
            used = lambda n: re.search(rf"\b{n}\b", code) is not None
            for n in DEFINED.findall(code_of(mods[source])):
                if used(n):
                    paths.append((words + [n], ""))
            for (at, n), target in exports.items():
                if at == source and target != m and used(n):
                    edges[m].setdefault(target, set()).add(n)
        for words, group in paths:
            tails = [w.strip().split(" as ")[0].split("::") for w in group.split(",")] if group else [[]]
            for tail in tails:
                full = words + [w for w in tail if w]
                target = resolve(mods, m, full)
                if target is None:
                    continue
                name = full[-1]
                target = exports.get((target, name), target)
                if target != m:
                    edges[m].setdefault(target, set()).add(name)
    return edges


def cycles(edges):
    """Tarjan's strongly connected components of more than one node."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    crates = sorted(p.parent for p in root.glob("**/Cargo.toml") if (p.parent / "src").is_dir()
                    and "target" not in p.parts and ".ci" not in p.parts)
    found = 0
    for crate in crates:
        mods = modules_of(crate / "src")
        edges = graph_of(mods)
        name = lambda m: "::".join(m) or "(crate root)"
        for comp in cycles(edges):
            found += 1
            print(f"{crate.relative_to(root) or '.'}: import cycle among {', '.join(map(name, comp))}")
            for a in comp:
                for b, names in sorted(edges[a].items()):
                    if b in comp:
                        print(f"  {name(a)} -> {name(b)}: {', '.join(sorted(names))}")
    print(f"{len(crates)} crates, {found} import cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
