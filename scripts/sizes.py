#!/usr/bin/env python3
"""Finds the library files and the product functions too long to review; `make lint` runs it.

A library file is a source file under a workspace crate's `src/` (its unit tests included); it
may hold at most MAX_FILE lines. A product function is a `fn` with a body in such a file, outside
its unit tests (`#[cfg(test)]` to the end of the file, or a file of its own named `tests.rs` or
`*_tests.rs`); it may span at most MAX_FN lines from
its `fn` to its closing brace. Comments and string literals are blanked before braces are
counted, so that a brace inside them does not count. The exit code is 1 when something is over.

The runtimes copied into every skeleton and the tracer (`skeletons/`, `trace/tracer/`) are held
to the same limits: each file at most MAX_FILE lines, each function at most MAX_FN (in C, from a
definition's first line at column 0 to its closing brace at column 0).

Usage: scripts/sizes.py [ROOT]   (default: the repository this script is in)
"""

import re
import sys
from pathlib import Path

MAX_FILE = 800
MAX_FN = 150

# Comments, strings (raw ones too) and character literals, blanked (newlines kept) before counting.
LEXEMES = re.compile(
    r"//[^\n]*|/\*.*?\*/|r(#*)\"[\s\S]*?\"\1|b?\"(?:\\.|[^\"\\])*\"|b?'(?:\\.|[^'\\])'", re.S
)
FN = re.compile(r"\bfn\s+(\w+)")
TESTS = re.compile(r"(?m)^#\[cfg\(test\)\]")


def blank(match):
    return re.sub(r"[^\n]", " ", match.group(0))


def long_functions(text):
    """(line, name, lines) of each function over MAX_FN lines in `text`, outside its tests."""
    code = LEXEMES.sub(blank, text)
    tests = TESTS.search(code)
    if tests:
        code = code[: tests.start()]
    for m in FN.finditer(code):
        open_at, semi = code.find("{", m.end()), code.find(";", m.end())
        if open_at < 0 or 0 <= semi < open_at:
            continue  # a declaration without a body
        depth, k = 0, open_at
        while k < len(code):
            depth += {"{": 1, "}": -1}.get(code[k], 0)
            if depth == 0:
                break
            k += 1
        first, last = code.count("\n", 0, m.start()) + 1, code.count("\n", 0, k) + 1
        if last - first + 1 > MAX_FN:
            yield first, m.group(1), last - first + 1


C_FN = re.compile(r"^[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;]*$")
RUNTIMES = ["skeletons", "trace/tracer"]


def long_c_functions(text):
    """(line, name, lines) of each C function over MAX_FN lines in `text`."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = C_FN.match(line)
        if not m or line.startswith(("typedef", "struct", "#")):
            continue
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith("{") and ";" not in lines[j]:
            j += 1
        if j >= len(lines) or ";" in lines[j]:
            continue  # a declaration
        end = next((k for k in range(j, len(lines)) if lines[k].startswith("}")), len(lines) - 1)
        if end - i + 1 > MAX_FN:
            yield i + 1, m.group(1), end - i + 1


def runtime_files(root):
    """The runtimes' and the tracer's sources."""
    for folder in RUNTIMES:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".c", ".h", ".rs"):
                yield path


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    crates = sorted(p.parent for p in root.glob("**/Cargo.toml") if (p.parent / "src").is_dir()
                    and "target" not in p.parts)
    def over_limits(path):
        """The lines over the limits in `path` (a file too long, its functions too long)."""
        text = path.read_text()
        rel = path.relative_to(root)
        found = []
        if text.count("\n") > MAX_FILE:
            found.append(f"{rel}: {text.count(chr(10))} lines (at most {MAX_FILE})")
        if path.name == "tests.rs" or path.name.endswith("_tests.rs"):
            return found
        longs = long_c_functions(text) if path.suffix in (".c", ".h") else long_functions(text)
        for line, name, length in longs:
            found.append(f"{rel}:{line}: function {name} spans {length} lines (at most {MAX_FN})")
        return found

    runtimes = list(runtime_files(root))
    files = [p for crate in crates for p in sorted((crate / "src").rglob("*.rs"))] + runtimes
    found = [line for path in files for line in over_limits(path)]
    for line in found:
        print(line)
    over = len(found)
    print(f"{len(crates)} crates and {len(runtimes)} runtime and tracer files, {over} over the limits")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
