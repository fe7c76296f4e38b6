"""`python -m txviz bench all`: every benchmark in turn, their ratios gathered in one markdown file."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

RATIO = re.compile(r"\bratios?\b|\bspeed-?ups?\b", re.IGNORECASE)
TIMES = re.compile(r"\d[\d.,]*\s*x\b")  # a value written as a ratio: 1.23x
NUMBER = re.compile(r"^-?[\d.,]+(e[-+]?\d+)?[x%]?$")


@dataclass(frozen=True)
class Ratio:
    """One ratio a benchmark printed: what it compares and the value (as printed)."""

    bench: str
    what: str
    value: str


@dataclass(frozen=True)
class Result:
    name: str
    code: int
    seconds: float
    output: str


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_ratios(bench: str, lines: list[str]) -> tuple[list[Ratio], set[int]]:
    """Ratios in markdown tables (columns whose header says ratio or speedup); lines used."""
    found, used = [], set()
    i = 0
    while i < len(lines):
        if not (
            lines[i].lstrip().startswith("|") and i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: ")
        ):
            i += 1
            continue
        header, j = cells(lines[i]), i + 2
        used.update({i, i + 1})
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            row = cells(lines[j])
            label = " ".join(c for c in row[: min(2, len(row))] if c)
            found += [
                Ratio(bench, f"{label}: {h}", v)
                for h, v in zip(header, row, strict=False)
                if RATIO.search(h) and v not in ("", "-")
            ]
            used.add(j)
            j += 1
        i = j
    return found, used


def fixed_width_ratios(bench: str, lines: list[str], used: set[int]) -> tuple[list[Ratio], set[int]]:
    """Ratios in right-aligned fixed-width tables whose header names a ratio or speedup column."""
    found, taken = [], set()
    for i, header in enumerate(lines):
        if i in used or header.lstrip().startswith("|") or not RATIO.search(header):
            continue
        j = i + 1
        while j < len(lines) and abs(len(lines[j]) - len(header)) <= 3 and lines[j].strip():
            tokens = list(re.finditer(r"\S+", lines[j]))
            # A value is a number with a header cell above it; numbers inside the label ("rate 2") have none.
            first = next(
                (k for k, t in enumerate(tokens)
                 if k and NUMBER.match(t.group()) and header[t.start() : t.end()].strip()),
                len(tokens),
            )  # fmt: skip
            label = " ".join(t.group() for t in tokens[:first])
            previous = tokens[first - 1].end() if first else 0
            for index, token in enumerate(
                tokens[first:]
            ):  # right-aligned: a header cell ends where its value ends
                name = header[previous : token.end()].strip()
                if index == 0 and not RATIO.search(name):  # the first value column (e.g. n) names the row
                    label = f"{label}, {name.split()[-1]} {token.group()}"
                elif RATIO.search(name) or (name.startswith("(") and name.endswith(")")):
                    found.append(Ratio(bench, f"{label}: {name}", token.group()))
                previous = token.end()
            taken.update({i, j})
            j += 1
        if j == i + 1:
            taken.discard(i)
    return found, taken


def ratios(bench: str, output: str) -> list[Ratio]:
    """Every ratio in a benchmark's output: table columns, then sentences that state one."""
    lines = output.splitlines()
    found, used = markdown_ratios(bench, lines)
    more, taken = fixed_width_ratios(bench, lines, used)
    found += more
    for i, line in enumerate(lines):
        text = line.strip(" -#")
        if i not in used | taken and RATIO.search(text) and (TIMES.search(text) or re.search(r"\d", text)):
            what, _, value = text.partition(":")
            found.append(Ratio(bench, what.strip(), value.strip()) if value else Ratio(bench, "", text))
    return found


def run_one(name: str, argv: list[str]) -> Result:
    """`python -m txviz bench NAME` in its own process (thread settings and memory stay apart)."""
    print(f"\n=== bench {name} ===", flush=True)
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "txviz", "bench", name, *argv],
        stdout=subprocess.PIPE,
        stderr=None,  # progress notes go straight to the terminal
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines = []
    for line in process.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    code = process.wait()
    return Result(name, code, time.perf_counter() - start, "".join(lines))


def write_report(results: list[Result], path: Path) -> None:
    rows = [r for result in results for r in ratios(result.name, result.output)]
    status = {r.name: f"exit {r.code}, {r.seconds:.0f} s" for r in results}
    lines = [
        "# txviz benchmarks",
        "",
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}. Every ratio is against a "
        "baseline measured in the same run; each benchmark's full output follows the table.",
        "",
        "| benchmark | what | ratio | run |",
        "|---|---|---|---|",
    ]
    for result in results:
        mine = [r for r in rows if r.bench == result.name] or [Ratio(result.name, "(no ratio printed)", "-")]
        lines += [f"| {r.bench} | {r.what.replace('|', '/')} | {r.value} | {status[r.bench]} |" for r in mine]
    for result in results:
        lines += [
            "",
            f"## {result.name} ({status[result.name]})",
            "",
            "```text",
            result.output.rstrip(),
            "```",
        ]
    path.write_text("\n".join(lines) + "\n")


def run_all(names: list[str], argv: list[str]) -> int:
    """Run the chosen benchmarks, write the markdown file, return the worst exit status."""
    parser = argparse.ArgumentParser(prog="python -m txviz bench all", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("bench-results.md"), help="the markdown file")
    parser.add_argument("--only", nargs="+", choices=names, help="just these benchmarks")
    parser.add_argument("--skip", nargs="+", choices=names, default=[], help="leave these out")
    args = parser.parse_args(argv)
    chosen = [n for n in names if (not args.only or n in args.only) and n not in args.skip]
    results = [run_one(name, []) for name in chosen]
    write_report(results, args.out)
    print(f"\nwrote {args.out}: {len(results)} benchmarks")
    return max((r.code for r in results), default=0)
