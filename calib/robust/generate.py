"""Robustness cases from a seed: PTX mutants (``check`` / ``run``), bad launch descriptions (``launch``) and bad
command lines (``cli``).  Case ``i`` of seed ``s`` depends only on ``(s, i)``, so any case of a campaign can be
rebuilt from its record.

The launch values (:data:`LAUNCH_VALUES`, :data:`RUN_VALUES`) cover every field of :class:`tcsim.launch.Launch`
and every keyword of :func:`tcsim.launch.run_launch` (a test checks they are all there), with wrong types, negative / zero / huge / over-the-limit numbers, bad dtypes and
paths that are directories, missing or not UTF-8; the command lines (:data:`CLI_CASES`) cover ``tcsim check`` and
``tcsim run`` with such paths, launch files without ``make_launch`` (or returning something else), and bad option
values.
"""
from __future__ import annotations

import random
from functools import lru_cache

from .execute import RUN_EXAMPLES, latin1
from .ptx_mutate import mutate
from .pool import REPO

#: the fraction of each kind in a campaign (check mutants are by far the cheapest)
MIX = {"check": 0.90, "run": 0.04, "launch": 0.045, "cli": 0.015}
#: files larger than this many bytes are mutated proportionally less often (``check`` cases)
BIG_FILE = 16384
#: instruction budget of ``run`` / ``launch`` cases (a looping mutant ends as a runaway diagnostic)
RUN_BUDGET = 5_000

DIMS = ["None", "'x'", "-1", "0", "1.5", "(0, 1, 1)", "(-1, 1, 1)", "(1, 0, 1)", "(1, 1, -5)", "(2**31, 1, 1)",
        "(2**31 - 1, 1, 1)", "(1, 65536, 1)", "(1, 1, 65536)", "(1, 65535, 1)", "(1, 1, 1, 1)", "()", "[]",
        "('a', 1, 1)", "(1.5, 1, 1)", "(float('nan'), 1, 1)", "(2**64, 1, 1)", "np.array([2, 1, 1])",
        "(np.int64(2), 1, 1)", "{'x': 1}", "object()", "b'ab'", "'111'", "(True, 1, 1)", "(1, None, 1)",
        "2**40", "np.float32(1.0)", "complex(1, 0)"]
BLOCKS = DIMS + ["(1025, 1, 1)", "(1024, 1, 1)", "(32, 32, 2)", "(2048, 1, 1)", "(1, 1, 65)", "(33, 1, 1)",
                 "(31, 1, 1)", "(16, 1, 1)", "(1, 1024, 1)", "(96, 1, 1)"]
CLUSTERS = DIMS + ["(16, 1, 1)", "(9, 1, 1)", "(8, 1, 1)", "(3, 1, 1)", "(2, 2, 2)", "(4, 4, 1)", "(1, 2, 1)",
                   "(32, 1, 1)"]
INTS = ["None", "'x'", "''", "-1", "0", "1", "1.5", "float('nan')", "float('inf')", "2**31", "2**63", "2**64",
        "10**30", "True", "[]", "{}", "object()", "b'\\xff'", "np.int64(-1)", "np.float32(2.5)", "complex(1, 2)",
        "np.array([1, 2])", "'12'"]
SMEM = INTS + ["48 * 1024", "48 * 1024 + 1", "227 * 1024", "227 * 1024 + 1", "232448", "232449", "10**12",
               "BASE.dynamic_smem + 1", "BASE.dynamic_smem - 1", "2**32 + BASE.dynamic_smem"]
PTXS = ["DIR", "DIRPTX", "MISSING", "Path(MISSING)", "Path(DIR)", "BADUTF", "Path(BADUTF)", "EMPTY", "None", "5",
        "''", "'garbage'", "'garbage\\n'", "TEXT[:len(TEXT) // 2]", "TEXT.encode()", "TEXT.replace('.entry', '.func')",
        "TEXT + '\\xff'", "'\\x00'", "[TEXT]", "Path(TMP)", "TMP + '/'", "'.ptx'", "' '", "TEXT * 2"]
KERNELS = ["None", "5", "''", "'nosuch'", "BASE.kernel + 'x'", "BASE.kernel.upper()", "[BASE.kernel]",
           "b'k'", "'\\xff'"]
ARRAYS = ["None", "'str'", "5", "-1", "2**64", "1.5", "float('nan')", "[1, 2, 3]", "(1, 2)", "{}", "b'abc'",
          "object()", "np.zeros(4, dtype=object)", "np.zeros(4, dtype=complex)", "np.array(['a', 'b'])",
          "np.zeros(4, dtype=np.float64)", "np.zeros(0, dtype=np.float32)", "np.zeros((), dtype=np.float32)",
          "np.zeros(1, dtype=np.int8)", "np.zeros(1 << 16, dtype=np.float16)", "np.zeros(4, dtype=bool)",
          "np.zeros((8, 8), dtype=np.float32)[::2]", "np.zeros((8, 8), dtype=np.float32).T",
          "np.zeros(4, dtype=[('a', 'i4')])", "np.zeros(4, dtype='datetime64[s]')", "np.int32(3)",
          "Pointer(np.zeros(4, np.float32))", "Struct(np.int32(1))", "Struct(Pointer(np.zeros(4, np.float32)))",
          "bytes(128)", "bytes(200)", "np.zeros(4, dtype=np.float32)", "ARGS[0]", "ARGS[-1]",
          "np.ma.masked_array(np.zeros(4, np.float32))", "np.memmap", "np.zeros(4, np.float32).view(np.uint8)"]
SCALARS = INTS + ["np.uint32(5)", "np.int8(-1)", "np.float64(1.0)", "np.bool_(True)", "np.array(3)",
                  "np.array([3])", "-2**31", "-2**31 - 1", "2**32 - 1", "2**32"]
LAUNCH_VALUES = {
    "ptx": PTXS, "kernel": KERNELS, "grid": DIMS, "block": BLOCKS, "cluster": CLUSTERS, "dynamic_smem": SMEM,
    "args": ["None", "[]", "ARGS[:-1]", "ARGS + [1]", "ARGS + ARGS", "tuple(ARGS)", "5", "'x'", "iter(ARGS)",
             "{0: 1}", "ARGS[::-1]", "[None] * len(ARGS)", "OBJECTS(ARGS)"],
    "name": ["5", "None", "b'x'", "'\\xff'", "object()"],
    "lowering": ["{'nosuch'}", "'x'", "5", "None", "{5}", "frozenset({'x@y'})", "[1]"],
    "programmatic": ["'x'", "2", "None", "-1", "[]"],
    "stack_size": INTS + ["2**40", "512 * 1024 + 1", "7"],
    "stack_frames": ["'x'", "5", "{'f': -1}", "{'f': 'x'}", "{5: 5}", "[]", "'ptxas'"],
    "non_portable_cluster": ["'x'", "2", "None", "[]"],
    "registers": ["-1", "0", "'x'", "1.5", "10**6", "256", "255", "None", "[]"],
    "signature": ["'x'", "5", "['nosuch']", "{'nosuch': 'f16'}", "['f16'] * 40", "[np.float16] * len(ARGS)",
                  "[None] * len(ARGS)", "['f16*'] * len(ARGS)", "{0: 'f32'}", "[object()] * len(ARGS)"],
    "cast": ["'x'", "5", "None", "True"],
}
RUN_VALUES = {
    "seed": ["'abc'", "-1", "2**70", "1.5", "None", "[]", "float('nan')", "True", "np.int64(3)", "b'x'"],
    "max_instructions": ["0", "-1", "'x'", "1", "10", "1.5", "None", "2**70", "float('inf')", "[]", "True"],
    "timing": ["'x'", "5", "None", "[]", "object()", "1.5", "'sm_90a'", "True"],
    "strict": ["'x'", "None", "5", "[]"],
    "detect": ["'x'", "None", "5", "[]"],
    "schedule": ["5", "'x'", "[]", "object()", "-1"],
    "trace": ["DIR", "MISSING + '/x/y.jsonl'", "5", "object()", "TMP + '/t.jsonl'", "b'x'", "''"],
    "observers": ["[5]", "'x'", "5", "[object()]", "[None]"],
    "tma_params": ["5", "'x'", "object()"],
    "tensor_pipe_params": ["5", "'x'", "object()"],
    "async_copy_params": ["5", "'x'", "object()"],
    "max_seconds": ["0", "-1", "'x'", "float('nan')", "float('inf')", "1e-9", "None", "[]", "10**30"],
    "progress": ["'x'", "5", "object()", "True", "None"],
    "tier": ["'x'", "5", "None", "'fast'", "'reference'", "'FAST'", "[]"],
    "nosuch_keyword": ["1"],
}

_OK_LAUNCH = """from tcsim.examples.mma_gemm import make_launch, check  # noqa
"""
LAUNCH_FILES = {
    "no_make_launch": ("x = 1\n", ["make_launch", "LAUNCH"]),
    "returns_int": ("def make_launch():\n    return 5\n", ["make_launch"]),
    "returns_none": ("def make_launch():\n    return None\n", ["make_launch"]),
    "returns_str": ("def make_launch():\n    return 'x.ptx'\n", ["make_launch"]),
    "launch_int": ("LAUNCH = 5\n", ["LAUNCH"]),
    "make_launch_not_callable": ("make_launch = 5\n", ["make_launch"]),
    "make_launch_needs_args": ("def make_launch(n):\n    return n\n", ["make_launch"]),
    "raises": ("def make_launch():\n    raise ValueError('boom')\n", ["launch.py:2"]),
    "syntax_error": ("def make_launch(:\n", ["launch.py:1"]),
    "import_error": ("import nosuchmodule_xyz\n", ["launch.py:1"]),
    "non_utf8": ("# \xff\xfe\ndef make_launch():\n    return 5\n", ["launch.py"]),
    "nul_byte": ("x = 1\x00\n", ["launch.py"]),
    "empty": ("", ["make_launch"]),
    "ptx_text": (".version 8.8\n.target sm_90a\n", ["launch.py"]),
    "check_raises": (_OK_LAUNCH + "def check(result, launch):\n    raise KeyError('k')\n", ["launch.py:3"]),
    "check_returns_none": (_OK_LAUNCH + "def check(result, launch):\n    return None\n", ["check"]),
    "check_returns_bool": (_OK_LAUNCH + "def check(result, launch):\n    return True\n", ["check"]),
    "bad_ptx_path": ("from tcsim.launch import Launch\ndef make_launch():\n    return Launch(ptx='{tmp}/adir')\n",
                     ["adir"]),
    "ok": (_OK_LAUNCH, []),
}
RUN_OPTIONS = [["--seed", "abc"], ["--seed", "-1"], ["--seed", "99999999999999999999999"],
               ["--max-instructions", "-1"], ["--max-instructions", "0"], ["--max-instructions", "x"],
               ["--max-instructions", "5"], ["--explore", "0"], ["--explore", "-1"], ["--explore", "x"],
               ["--schedule", "-1"], ["--schedule", "x"], ["--schedule", "99999999999"], ["--trace", "{dir}"],
               ["--trace", "{tmp}/no/such/t.jsonl"], ["--findings", "{dir}"], ["--findings", "{tmp}/no/f.json"],
               ["--backend", "x"], ["--explore", "2", "--schedule", "1"], ["--explore", "2", "--trace", "{tmp}/t"],
               ["--nosuch"], ["--seed"], ["--no-timing", "--strict"], []]
CHECK_FILES = {
    "dir": ("{dir}", None), "dirptx": ("{tmp}/dir.ptx", None), "missing": ("{tmp}/missing.ptx", None),
    "empty": ("{tmp}/e.ptx", ""), "nul": ("{tmp}/n.ptx", "\x00" * 64), "binary": ("{tmp}/b.ptx", None),
    "python": ("{tmp}/l.py", "def make_launch():\n    return 1\n"), "devnull": ("/dev/null", None),
    "only_bad_utf8": ("{tmp}/u.ptx", "\xff\xfe\xfd"), "bom": ("{tmp}/bom.ptx", "\xef\xbb\xbf.version 8.8\n"),
    "dash": ("-", None), "empty_name": ("", None),
}


@lru_cache(maxsize=None)
def tracked_ptx() -> tuple:
    """(path, bytes) of every tracked .ptx file of the checkout (git ls-files), sorted by path."""
    from calib.ptx_vocab import tracked_ptx as names_of
    out = []
    for n in names_of(REPO):
        p = REPO / n
        if p.is_file():
            out.append((n, p.read_bytes()))
    return tuple(out)


@lru_cache(maxsize=None)
def example_ptx(name: str) -> bytes:
    return (REPO / "examples" / f"{name}.ptx").read_bytes()


def _kind(rng, mix):
    r = rng.random()
    acc = 0.0
    for k, w in mix.items():
        acc += w
        if r < acc:
            return k
    return next(iter(mix))


def make_case(seed: int, i: int, mix=None, files=None, max_bytes: int | None = None,
              budget: int | None = RUN_BUDGET) -> dict:
    """Case ``i`` of campaign ``seed``.  ``files``: restrict ``check`` mutants to these tracked paths;
    ``max_bytes``: only tracked files up to this size (a fast sample); ``budget``: the instruction budget of
    ``run`` / ``launch`` cases (None: the simulator's default budget)."""
    rng = random.Random(f"{seed}:{i}")
    kind = _kind(rng, mix or MIX)
    case: dict = {"id": i, "kind": kind}
    if kind == "check":
        pool = [(n, b) for n, b in tracked_ptx() if (files is None or n in files)
                and (max_bytes is None or len(b) <= max_bytes)]
        # every file, the large ones (up to 180 KB: 20-50x the cost of checking a small one) less often
        name, data = rng.choices(pool, [min(1.0, BIG_FILE / max(len(b), 1)) for _, b in pool])[0]
        mut, labels = mutate(data, rng)
        case.update(source=name, mutations=labels, ptx=latin1(mut))
    elif kind == "run":
        ex = rng.choice(RUN_EXAMPLES)
        mut, labels = mutate(example_ptx(ex), rng)
        case.update(source=f"examples/{ex}.ptx", example=ex, mutations=labels, ptx=latin1(mut),
                    max_instructions=budget)
    elif kind == "launch":
        ex = rng.choice(RUN_EXAMPLES)
        lau, run = {}, {}
        for _ in range(rng.choice([1, 1, 1, 2])):
            if rng.random() < 0.7:
                key = rng.choice(list(LAUNCH_VALUES) + ["args[i]"] * 4)
                if key == "args[i]":
                    from .execute import example_launch
                    n = len(example_launch(ex)[1].args)
                    j = rng.randrange(n)
                    lau[f"args[{j}]"] = rng.choice(ARRAYS + SCALARS)
                else:
                    lau[key] = rng.choice(LAUNCH_VALUES[key])
            else:
                key = rng.choice(list(RUN_VALUES))
                run[key] = rng.choice(RUN_VALUES[key])
        case.update(example=ex, launch=lau, run=run, max_instructions=budget)
    else:
        case.update(_cli_case(rng))
    return case


def _cli_case(rng) -> dict:
    r = rng.random()
    if r < 0.4:
        name = rng.choice(sorted(CHECK_FILES))
        path, text = CHECK_FILES[name]
        files = {}
        if text is not None:
            files[path.replace("{tmp}/", "")] = text
        elif name == "binary":
            files["b.ptx"] = latin1(bytes(rng.randrange(256) for _ in range(512)))
        argv = ["check", path] + (["{tmp}/e2.ptx"] if rng.random() < 0.2 else [])
        if len(argv) == 3:
            files["e2.ptx"] = ""
        return {"argv": argv, "files": files, "expect_in": [path.replace("{dir}", "{tmp}/adir") or "''"],
                "variant": name}
    if r < 0.7:
        name = rng.choice(sorted(LAUNCH_FILES))
        text, want = LAUNCH_FILES[name]
        opts = rng.choice(RUN_OPTIONS) if rng.random() < 0.3 else ["--max-instructions", "5000"]
        return {"argv": ["run", "{tmp}/launch.py", *opts], "files": {"launch.py": text},
                "expect_in": want + ["launch.py"] + [o for o in opts if o.startswith("--")],
                "variant": f"launch file {name}"}
    if r < 0.85:
        path = rng.choice(["{dir}", "{tmp}/dir.py", "{tmp}/missing.py", "nosuch.module.xyz", "{tmp}/dir.ptx",
                           "tcsim.examples.nosuch", "tcsim.isa", "tcsim.examples", "", ".", "/", "{tmp}/x.txt",
                           "tcsim.examples.mma_gemm:make_launch", "tcsim..x"])
        return {"argv": ["run", path, "--max-instructions", "5000"], "files": {"x.txt": "hello"},
                "expect_in": [path.replace("{tmp}", "").strip("/") or "launch", "launch", "module"],
                "variant": f"run path {path}"}
    opts = rng.choice(RUN_OPTIONS)
    return {"argv": ["run", "tcsim.examples.mma_gemm", *opts], "files": {},
            "expect_in": [o.split("=")[0] for o in opts if o.startswith("--")] + ["usage"],
            "variant": f"run options {opts}"}


def cases(seed: int, count: int, start: int = 0, **kw):
    for i in range(start, start + count):
        yield make_case(seed, i, **kw)
