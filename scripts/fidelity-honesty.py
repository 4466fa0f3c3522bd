#!/usr/bin/env python3
"""Is the fidelity panel honest? For every NPB fixture of ../shared/fixtures/npb: build its
skeleton (the default build, fidelity-checked), run it under SimGrid SMPI on five scenarios
(reference, 5 MB/s, latency x10, CPU 1/2, four ranks per host) and compare the error its
by-phase prediction makes against SimGrid's replay of the full trace with the error
`mpiskel check` reports for the same platform. Prints a Markdown table and a summary.

Usage: scripts/fidelity-honesty.py [MPISKEL] [FIXTURES] [OUT]
  (defaults: target/release/mpiskel, ../shared/fixtures/npb, /tmp/fidelity-honesty)
"""
import csv
import json
import os
import statistics
import subprocess
import sys

MPISKEL = sys.argv[1] if len(sys.argv) > 1 else "target/release/mpiskel"
NPB = sys.argv[2] if len(sys.argv) > 2 else "../shared/fixtures/npb"
OUT = sys.argv[3] if len(sys.argv) > 3 else "/tmp/fidelity-honesty"
SCENARIOS = [
    ("ref", "ref.xml", "hostfile_1perhost.txt"),
    ("bw5MBps", "bw5MBps.xml", "hostfile_1perhost.txt"),
    ("lat10x", "lat10x.xml", "hostfile_1perhost.txt"),
    ("speedhalf", "speedhalf.xml", "hostfile_1perhost.txt"),
    ("share4", "ref.xml", "hostfile_4perhost.txt"),
]


def sh(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=900)


def main():
    os.makedirs(OUT, exist_ok=True)
    truth = {}
    with open(os.path.join(NPB, "ground-truth.csv")) as f:
        for row in csv.DictReader(f):
            key = (f"{row['benchmark']}.{row['class']}.{row['np']}", row["scenario"])
            truth[key] = float(row["replay_s"]) if row["replay_s"] else None
    cases = sorted(d for d in os.listdir(NPB) if os.path.isfile(os.path.join(NPB, d, "trace.txt")))
    plat = os.path.join(NPB, "platforms")
    rows = []
    print("| case | kept | skeleton / replay (ref) | scenario | replay (s) | SMPI predicted (s) | SMPI error | panel error | difference |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        trace = os.path.join(NPB, case, "trace.txt")
        skel = os.path.join(OUT, case)
        b = sh([MPISKEL, "build", trace, "-o", skel, "--force", "--json", "-q"])
        if b.returncode != 0:
            print(f"| {case} | build failed: {b.stderr.strip()[:100]} |||||||")
            continue
        built = json.loads(b.stdout)
        decision = built.get("fidelity_decision") or {}
        kept = decision.get("candidates", [{}])[decision.get("kept", 0)].get("name", "default")
        for name, pf, hf in SCENARIOS:
            replay = truth.get((case, name))
            if not replay:
                continue
            args = ["--platform", os.path.join(plat, pf), "--hostfile", os.path.join(plat, hf)]
            r = sh([MPISKEL, "run", skel, "--mpi", "smpi", "--json", *args])
            c = sh([MPISKEL, "check", skel, trace, "--json", "--max-error", "1000", *args])
            if r.returncode != 0 or c.returncode != 0:
                print(f"| {case} | {kept} | | {name} | run or check failed |||||")
                continue
            run = json.loads(r.stdout)
            panel = json.loads(c.stdout)["fidelity"][0]
            smpi_err = 100.0 * (run["predicted_s"] / replay - 1.0)
            share = run["skeleton_s"] / replay
            diff = panel["error_pct"] - smpi_err
            rows.append((case, name, smpi_err, panel["error_pct"], diff, share))
            print(
                f"| {case} | {kept} | {share:.3f} | {name} | {replay:.4f} | {run['predicted_s']:.4f} | "
                f"{smpi_err:+.2f} % | {panel['error_pct']:+.2f} % | {diff:+.2f} |",
                flush=True,
            )
    if not rows:
        return 1
    diffs = [abs(r[4]) for r in rows]
    print()
    print(f"rows: {len(rows)}; |panel - SMPI| mean {statistics.mean(diffs):.2f} points, max {max(diffs):.2f}")
    for name, _, _ in SCENARIOS:
        errs = [abs(r[2]) for r in rows if r[1] == name]
        if errs:
            print(f"{name}: SMPI |error| mean {statistics.mean(errs):.2f} %, max {max(errs):.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
