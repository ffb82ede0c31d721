"""Write the bug zoo's kernels: ``python tests/zoo/gen_zoo.py`` renders every pair of :mod:`zoo` (template +
edit) into ``tests/zoo/kernels/<class>_<name>.correct.ptx`` / ``.buggy.ptx``.  ``test_zoo.py`` checks the
committed files are what this writes."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # noqa: E402


def main() -> int:
    zoo.KERNELS.mkdir(exist_ok=True)
    for pair in zoo.PAIRS:
        correct, buggy = zoo.render(pair)
        pc, pb = zoo.paths(pair)
        pc.write_text(correct)
        pb.write_text(buggy)
    print(f"wrote {2 * len(zoo.PAIRS)} kernels to {zoo.KERNELS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
