"""Summarize py-spy raw (collapsed) profiles: where a process's CPU went, by package and by function.

    .venv/bin/python bench/profile_top.py PROFILE.txt [PROFILE.txt …] [--top 25] [--match agents/]

py-spy records only threads that are running (not idle), so a sample is CPU time. Printed per file: the share
of samples by package (the leaf frame's: where the CPU was spent), the functions with the most samples
inclusive of what they called (each counted once per stack), and the leaf functions. `--match` adds the
inclusive share of every function whose file path contains the text (this project's own code, say).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]+)(?::(?P<line>\d+))?\)$")


def package(path: str) -> str:
    """site-packages/<name>/… → <name>; the project's own files → their top folder; the standard library → stdlib."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if "/lib/python3" in path:
        return "stdlib"
    for root in ("/work/", "/app/"):
        if root in path:
            parts = path.split(root, 1)[1].split("/")
            return parts[1] if len(parts) > 2 else parts[0]
    return path.rsplit("/", 1)[-1]


def parse(path: Path):
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = []
        for raw in stack.split(";"):
            match = FRAME.match(raw.strip())
            if match:
                frames.append((match["func"], match["file"]))
        yield frames, int(count)


def summarize(path: Path, top: int, match: str) -> None:
    total = 0
    leaf_pkg: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    matched: Counter[str] = Counter()
    for frames, count in parse(path):
        if not frames:
            continue
        total += count
        func, file = frames[-1]
        leaf_pkg[package(file)] += count
        leaf[f"{func} ({file.rsplit('site-packages/', 1)[-1]})"] += count
        seen = set()
        for func, file in frames:
            name = f"{func} ({file.rsplit('site-packages/', 1)[-1]})"
            if name in seen:
                continue
            seen.add(name)
            inclusive[name] += count
            if match and match in file:
                matched[name] += count
    print(f"== {path.name}: {total} samples")
    if not total:
        return
    print("  by package (leaf):  " + ", ".join(f"{name} {n * 100 / total:.1f}%" for name, n in leaf_pkg.most_common(12)))
    print("  inclusive:")
    for name, n in inclusive.most_common(top):
        print(f"    {n * 100 / total:5.1f}%  {name}")
    print("  leaf (self):")
    for name, n in leaf.most_common(top // 2):
        print(f"    {n * 100 / total:5.1f}%  {name}")
    if match:
        print(f"  inclusive, files matching {match!r}:")
        for name, n in matched.most_common(top):
            print(f"    {n * 100 / total:5.1f}%  {name}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("profiles", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="")
    args = parser.parse_args()
    for path in args.profiles:
        summarize(path, args.top, args.match)


if __name__ == "__main__":
    main()
