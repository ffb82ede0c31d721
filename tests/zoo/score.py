"""Score the detector on the zoo: ``python tests/zoo/score.py [-k NAME]`` runs every buggy twin on each of its
targets, timing off and on, seeds None, 1, 2 (as ``test_zoo.py`` does) and prints per pair how many of those runs
gave a finding that names the bug (class, both lines, the missing edge), what else was reported, and a total."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-k", default="", help="only pairs whose name contains this")
    a = ap.parse_args(argv)
    named_pairs = total_pairs = 0
    for pair in zoo.PAIRS:
        if a.k not in pair.name:
            continue
        total_pairs += 1
        hits = runs = 0
        seen = set()
        for target in pair.targets:
            for timing in (False, True):
                for seed in (None, 1, 2):
                    exp, findings, stop = zoo.run_buggy(pair, target, timing, seed)
                    runs += 1
                    hits += any(zoo.matches(f, exp) for f in findings)
                    seen.update(f"class {f.cls} lines {list(f.lines)}" for f in findings)
                    if stop is not None and not findings:
                        seen.add(f"stopped: {type(stop).__name__}")
        named_pairs += hits == runs
        print(f"{pair.name:40s} class {pair.cls:2d}  named in {hits:2d}/{runs:2d} runs   "
              f"{'; '.join(sorted(seen)) or 'nothing reported'}")
    print(f"\n{named_pairs}/{total_pairs} pairs named in every run")
    return 0 if named_pairs == total_pairs else 1


if __name__ == "__main__":
    raise SystemExit(main())
