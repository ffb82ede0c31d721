"""A planted change of any tensor-core numerics parameter fails a behaviour test (issue 22, item 1).

MUTANTS moves each parameter of sim/numerics/tensor_core.py by one step: every field of every float row of the
parameter table that oracle or hardware data covers (block, F = frac_bits, the floor on E, the f32 result cut, the
group size, the zero-term and cancelled-group policies) and every module constant the arithmetic reads at run time
(the output rounding per accumulator, f32 overflow to Inf, the canonical NaNs).  The behaviour tests that must then
fail: for the sm_100a rows and the constants, the replay of the recorded mmasim data (test_mmasim_replay.py); for
the sm_90a rows, the replays of the H100 records (tests/hw/test_mma_numerics_golden.py,
tests/hw/test_mma_fp8_numerics_golden.py -- the ptxas fp8 lowering, whose ``lowering`` field is mutated too --,
tests/hw/test_wgmma_numerics_golden.py, its floor-on-E vectors included).  The rows no parameter of which is read, or that have no data, are named in
UNCOVERED_ROWS with the reason.

CI (cheap): each mutant runs only its witness -- the first recorded chunk (sm_100a) or H100 test (sm_90a) that it
makes fail -- and must fail it; ``python tests/numerics/oracle_replay.py witnesses`` re-derives witnesses.json.
Slow: every mutant against all the recorded mmasim data, and the search for its witness.

A few one-step changes cannot change any output: EQUIVALENT says why for each, and test_equivalent_mutants_are_exact
checks the reason from the format table (e.g. the fp8 kinds' products never come near the floor on E, and C stays
exact below it; the fp8 lowering never reads the row's block), so the list cannot hide a live parameter.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import sys
from types import MappingProxyType
from pathlib import Path
from typing import Optional

import pytest

import oracle_replay as R
import test_mmasim_oracle as MO
from tcsim.numerics import tensor_core as tc
from tcsim.numerics.lowp import lowp_format

#: the sm_100a parameter-table rows the recorded mmasim data covers: (arch, path, kind)
ROWS_SM100 = tuple(("sm_100a",) + r for r in (
    ("tcgen05", "f16"), ("tcgen05", "tf32"), ("tcgen05", "f8f6f4"), ("tcgen05", "mxf8f6f4"), ("tcgen05", "mxf4"),
    ("tcgen05", "mxf4nvf4"), ("mma.sync", "f16"), ("mma.sync", "tf32")))
#: the sm_90a float rows the H100 records cover (tests/hw/test_mma_numerics_golden.py, test_wgmma_numerics_golden.py)
ROWS_SM90 = (("sm_90a", "mma.sync", "f16"), ("sm_90a", "mma.sync", "tf32"), ("sm_90a", "mma.sync", "f8f6f4"),
             ("sm_90a", "wgmma", "f16"), ("sm_90a", "wgmma", "tf32"), ("sm_90a", "wgmma", "f8f6f4"))
ROWS = ROWS_SM100 + ROWS_SM90
#: rows no numerics parameter of which is read: the integer kinds (mma_int is exact, its only entry field, block,
#: is unused) and sm_100a mma.sync fp8 (provisional, no data: README "What backs each claim")
UNCOVERED_ROWS = {"integer rows: mma_int takes no parameters": [k for k in tc._TABLE if k[2] == "i8"],
                  "no data (provisional parameters)": [("sm_100a", "mma.sync", "f8f6f4")]}


def _row_of(v: MO.Variant):
    kind = v.tc_kind if v.path == "tcgen05" else {"f16": "f16", "bf16": "f16", "tf32": "tf32"}[v.a_fmt]
    return ("sm_100a", v.path, kind)


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One planted change: ``entry`` replaces fields of one table row, ``policy`` fields of the TensorCoreParams the
    row yields, ``constants`` module attributes of tensor_core."""

    id: str
    row: Optional[tuple] = None            # (arch, path, kind); None: a module constant (every variant)
    entry: tuple = ()                      # ((field, value), ...) of tensor_core._Entry
    policy: tuple = ()                     # ((field, value), ...) of TensorCoreParams
    constants: tuple = ()                  # ((name, value), ...)

    def touches(self, v: MO.Variant) -> bool:
        if self.row is not None:
            return _row_of(v) == self.row
        names = dict(self.constants)
        if "OUTPUT_ROUNDING" in names or "CANONICAL_NAN" in names:
            old = getattr(tc, "OUTPUT_ROUNDING" if "OUTPUT_ROUNDING" in names else "CANONICAL_NAN")
            return names.get("OUTPUT_ROUNDING", names.get("CANONICAL_NAN"))[v.acc] != old[v.acc]
        return v.acc == "f32"              # F32_RZ_OVERFLOW_TO_INF

    @contextlib.contextmanager
    def planted(self):
        """The table and constants changed for the duration (restored afterwards, also on error).  A policy change
        wraps ``tc_params`` -- in tensor_core and in every loaded module that imported it -- so that the row's
        parameters carry the changed policy wherever a test asks for them."""
        saved = {"_TABLE": tc._TABLE, **{n: getattr(tc, n) for n, _ in self.constants}}
        rebound = []
        try:
            if self.entry:
                key = self.row
                table = dict(tc._TABLE)
                table[key] = table[key]._replace(**dict(self.entry))
                tc._TABLE = MappingProxyType(table)
            for n, val in self.constants:
                setattr(tc, n, val)
            if self.policy:
                orig, row, policy = tc.tc_params, self.row, dict(self.policy)

                def tc_params(arch, path, in_fmt, kind=None):
                    p = orig(arch, path, in_fmt, kind)
                    k = kind or tc._IMPLIED_KIND.get(in_fmt)
                    return dataclasses.replace(p, **policy) if (arch, path, k) == row else p
                for mod in list(sys.modules.values()):
                    if getattr(mod, "tc_params", None) is orig:
                        rebound.append(mod)
                        mod.tc_params = tc_params
            yield
        finally:
            for n, val in saved.items():
                setattr(tc, n, val)
            for mod in rebound:
                mod.tc_params = orig

    def params(self, v: MO.Variant):
        p = MO.tcsim_params(v)
        return dataclasses.replace(p, **dict(self.policy)) if self.policy else p


def _mutants():
    out = []
    for row in ROWS:
        e = tc._TABLE[row]
        rid = ".".join(row)
        out += [Mutant(f"{rid}:frac_bits{d:+d}", row, (("frac_bits", e.frac_bits + d),)) for d in (-1, 1)]
        out += [Mutant(f"{rid}:block*2", row, (("block", e.block * 2),)),
                Mutant(f"{rid}:block/2", row, (("block", e.block // 2),))]
        out += [Mutant(f"{rid}:e_floor{d:+d}", row, (("e_floor", e.e_floor + d),)) for d in (-1, 1)]
        if e.out_trunc_frac is None:
            out.append(Mutant(f"{rid}:out_trunc_frac=22", row, (("out_trunc_frac", 22),)))
        else:
            out += [Mutant(f"{rid}:out_trunc_frac{d:+d}", row, (("out_trunc_frac", e.out_trunc_frac + d),))
                    for d in (-1, 1)]
        out.append(Mutant(f"{rid}:zero_exp_policy=min", row, policy=(("zero_exp_policy", "min"),)))
        if e.lowering is not None:          # the H100 mma.sync fp8 lowering: the instruction as one fused block
            out.append(Mutant(f"{rid}:lowering=None", row, (("lowering", None),)))
        if e.group is not None:
            out += [Mutant(f"{rid}:group*2", row, (("group", e.group * 2),)),
                    Mutant(f"{rid}:group/2", row, (("group", e.group // 2),)),
                    Mutant(f"{rid}:group_exp_policy=sum", row, policy=(("group_exp_policy", "sum"),))]
    out += [Mutant("OUTPUT_ROUNDING[f32]=rne", constants=(("OUTPUT_ROUNDING", MappingProxyType(
                {**tc.OUTPUT_ROUNDING, "f32": "rne"})),)),
            Mutant("OUTPUT_ROUNDING[f16]=rz", constants=(("OUTPUT_ROUNDING", MappingProxyType(
                {**tc.OUTPUT_ROUNDING, "f16": "rz"})),)),
            Mutant("F32_RZ_OVERFLOW_TO_INF=False", constants=(("F32_RZ_OVERFLOW_TO_INF", False),)),
            Mutant("CANONICAL_NAN[f32]=0x7FC00000", constants=(("CANONICAL_NAN", MappingProxyType(
                {**tc.CANONICAL_NAN, "f32": 0x7FC00000})),)),
            Mutant("CANONICAL_NAN[f16]=0x7E00", constants=(("CANONICAL_NAN", MappingProxyType(
                {**tc.CANONICAL_NAN, "f16": 0x7E00})),))]
    return tuple(out)


MUTANTS = _mutants()
BY_ID = {m.id: m for m in MUTANTS}


# ---- one-step changes that no input can observe, each with the reason, checked below ----------------------------
def forms(row: tuple) -> list:
    """(a_fmt, b_fmt, acc) of every operand-format pair and accumulator the row takes."""
    e = tc._TABLE[row]
    return [(a, b, acc) for a in e.in_fmts for b in e.in_fmts for acc in tc.ACC_FORMATS
            if row[2] in ("f8f6f4", "mxf8f6f4") or a == b]


def _min_product_exp(a_fmt: str, b_fmt: str) -> int:
    """Exponent of the smallest non-zero |a*b| (the two formats' smallest subnormals)."""
    fa, fb = lowp_format(a_fmt), lowp_format(b_fmt)
    return (fa.emin - fa.man_bits) + (fb.emin - fb.man_bits)


def _c_unharmed(row: tuple, acc: str, E: int) -> bool:
    """C alone (every product zero) loses nothing when the window's last bit is 2**(E - F): the f16 accumulator
    (round to nearest) needs C exact; the f32 one (round toward zero) only needs the window at least as fine as the
    result's last bit (its e8m13 cut, if any), since truncating toward zero twice is truncating once."""
    e, fo = tc._TABLE[row], lowp_format(acc)
    keep = fo.man_bits if (acc == "f16" or e.out_trunc_frac is None) else e.out_trunc_frac
    return E - e.frac_bits <= fo.emin - keep


def _all_exact(row: tuple, a: str, b: str, acc: str, E: int) -> bool:
    """Every term is exact in a window whose last bit is 2**(E - F): products are multiples of the product of the two
    formats' smallest subnormals, C of the accumulator's."""
    fo = lowp_format(acc)
    return E - tc._TABLE[row].frac_bits <= min(_min_product_exp(a, b), fo.emin - fo.man_bits)


def _e_raise_unobservable(row: tuple, a: str, b: str, acc: str, hi: int) -> bool:
    """Raising E up to ``hi`` where it was lower changes nothing for this form when either every non-zero product
    lies above ``hi`` (E is raised only while C is the only term) and C alone is unharmed at ``hi``, or every term
    stays exact in the window at E <= hi (the sum, and so its one rounding, is the same)."""
    return (_min_product_exp(a, b) > hi and _c_unharmed(row, acc, hi)) or _all_exact(row, a, b, acc, hi)


def floor_unobservable(row: tuple, step: int) -> bool:
    """Moving the row's floor on E by ``step`` changes no output of any form of the row."""
    e = tc._TABLE[row]
    if e.group is not None or row[2] == "mxf8f6f4":          # scales move products anywhere
        return False
    for a, b, acc in forms(row):
        hi = max(e.e_floor, e.e_floor + step) + lowp_format(acc).emin - lowp_format("f32").emin
        if not _e_raise_unobservable(row, a, b, acc, hi):
            return False
    return True


def zero_min_unobservable(row: tuple) -> bool:
    """zero_exp_policy 'min' (a zero term has exponent ZERO_EXP_MIN = -126, so E >= -126 whenever a product or C is
    zero) changes no output of any form of the row: -126 is at or below the floor, or raising E to -126 is
    unobservable."""
    e = tc._TABLE[row]
    if e.group is not None or row[2] == "mxf8f6f4":
        return False
    for a, b, acc in forms(row):
        floor = e.e_floor + lowp_format(acc).emin - lowp_format("f32").emin
        if not (tc.ZERO_EXP_MIN <= floor or _e_raise_unobservable(row, a, b, acc, tc.ZERO_EXP_MIN)):
            return False
    return True


#: the K of every instruction shape of an sm_90a row (PTX ISA §9.7.14.5.14 mma.sync shapes, §9.7.15.5 wgmma)
INSTRUCTION_K = {("sm_90a", "mma.sync", "f16"): (8, 16), ("sm_90a", "mma.sync", "tf32"): (4, 8),
                 ("sm_90a", "wgmma", "f16"): (16,), ("sm_90a", "wgmma", "tf32"): (8,),
                 ("sm_90a", "wgmma", "f8f6f4"): (32,)}


def block_up_unobservable(row: tuple) -> bool:
    """A larger block changes nothing when no instruction of the row has more than ``block`` products: one
    instruction is then one block either way, and instructions chain through their rounded D."""
    return row in INSTRUCTION_K and max(INSTRUCTION_K[row]) <= tc._TABLE[row].block


def block_unread_by_lowering(row: tuple) -> bool:
    """The row is lowered (H100 mma.sync fp8: tensor_core._mma_fp8_via_f16) and the lowering never reads the row's
    block: each f16 half (k % 4 in {0, 1}, then {2, 3}) is fused as one block of its own length."""
    import inspect

    src = inspect.getsource(tc._mma_fp8_via_f16)
    return (tc._TABLE[row].lowering == tc.LOWER_FP8_VIA_F16 and "params.block" not in src
            and src.count("len(kk)") >= 2 and "_mma_fp8_via_f16(" in inspect.getsource(tc._mma_float))


def _equivalent():
    out = {}
    for row in ROWS:
        rid = ".".join(row)
        if block_unread_by_lowering(row):
            for m in ("block*2", "block/2"):
                out[f"{rid}:{m}"] = ("the lowering fuses each f16 half as one block of its own length; the row's "
                                     "block is never read", lambda row=row: block_unread_by_lowering(row))
        for d in (-1, 1):
            if floor_unobservable(row, d):
                out[f"{rid}:e_floor{d:+d}"] = (
                    "E set by the floor either only ever meets C alone, which the floor leaves unharmed, or keeps "
                    "every term exact",
                    lambda row=row, d=d: floor_unobservable(row, d))
        if zero_min_unobservable(row):
            out[f"{rid}:zero_exp_policy=min"] = (
                "E raised to -126 either only ever meets C alone, which it leaves unharmed, or keeps every term "
                "exact",
                lambda row=row: zero_min_unobservable(row))
        if block_up_unobservable(row) and f"{rid}:block*2" not in out:
            out[f"{rid}:block*2"] = ("no instruction of the row has more products than one block",
                                     lambda row=row: block_up_unobservable(row))
    return out


#: mutant id -> (why no output can change, the check of that reason from the format table and PTX shapes)
EQUIVALENT = _equivalent()
#: live changes no committed data catches: mutant id -> what data would (must stay exactly this set).  Empty since
#: the wgmma floor-on-E vectors (tests/golden/wgmma_numerics/targeted_floor.npz) caught sm_90a.wgmma.tf32:e_floor+1.
GAPS: dict = {}


# ---- the H100 behaviour tests of the sm_90a rows -------------------------------------------------------------------
HW_TESTS = Path(__file__).resolve().parents[1] / "hw"


def _hw_module(name: str):
    for p in (str(HW_TESTS), str(HW_TESTS.parents[1])):     # tests/hw, and the root for calib
        if p not in sys.path:
            sys.path.insert(0, p)
    return importlib.import_module(name)


def h100_tests(row: tuple) -> list:
    """[(test id, callable)] of the H100-record tests that use the row, cheapest first."""
    arch, path, kind = row
    fmts = {"f16": ("f16", "bf16"), "tf32": ("tf32",), "f8f6f4": ("e4m3", "e5m2")}[kind]
    out = []
    if path == "mma.sync" and kind == "f8f6f4":           # the ptxas lowering (tests/golden/mma_sync_fp8)
        F8 = _hw_module("test_mma_fp8_numerics_golden")
        out += [(f"test_mma_fp8_numerics_golden.py::test_targeted_bit_exact[{n}]",
                 lambda n=n: F8.test_targeted_bit_exact(n)) for n in F8.PAIRS]
        out += [(f"test_mma_fp8_numerics_golden.py::test_random_chunk_bit_exact[{n}]",
                 lambda n=n: F8.test_random_chunk_bit_exact(n)) for n in F8.PAIRS]
    elif path == "mma.sync":
        M = _hw_module("test_mma_numerics_golden")
        for name, pair in M.FLOAT_PAIRS.items():
            if pair.ab in fmts:
                out.append((f"test_mma_numerics_golden.py::test_discriminating_elements_bit_exact[{name}]",
                            lambda n=name: M.test_discriminating_elements_bit_exact(n)))
                out.append((f"test_mma_numerics_golden.py::test_targeted_cases_bit_exact[{name}]",
                            lambda n=name: M.test_targeted_cases_bit_exact(n)))
    else:
        W = _hw_module("test_wgmma_numerics_golden")
        names = [n for n, c in W.COMBOS.items() if c.is_float and c.a in fmts]
        out += [(f"test_wgmma_numerics_golden.py::test_targeted_vectors_bit_exact[{n}]",
                 lambda n=n: W.test_targeted_vectors_bit_exact(n)) for n in names if n in W.TARGETED]
        out += [(f"test_wgmma_numerics_golden.py::test_model_bit_exact_on_every_case[{n}-{N}]",
                 lambda n=n, N=N: W.test_model_bit_exact_on_every_case(n, N)) for N in (256, 8) for n in names]
        # the floor-on-E vectors (bf16 / tf32 -> f32), last: the witnesses found before they were recorded stay
        out += [(f"test_wgmma_numerics_golden.py::test_floor_vectors_bit_exact[{n}]",
                 lambda n=n: W.test_floor_vectors_bit_exact(n)) for n in names if n in ("bf16_f32", "tf32_f32")]
    return out


# ---- witnesses: where each live mutant first changes an output ---------------------------------------------------
def find_witness(m: Mutant, recorded: dict, only: Optional[dict] = None) -> Optional[dict]:
    """The first (variant, chunk) in replay order where the mutant's outputs differ from the recording: whether
    the chunk's raw-recorded cases show it (``raw``: how many of them differ) or only its digest does.  ``only``: a
    witness to re-check (its chunk alone; only its raw tiles when they showed the difference).  sm_90a rows: the
    first H100-record test (h100_tests) that fails with the change planted."""
    if m.row in ROWS_SM90:
        for tid, run in h100_tests(m.row):
            if only is not None and tid != only["test"]:
                continue
            with m.planted():
                try:
                    run()
                except (AssertionError, ValueError) as e:
                    return dict(test=tid, error=str(e).splitlines()[0][:160])
        return None
    for v in MO.VARIANTS:
        if not m.touches(v):
            continue
        if only is not None and v.name != only["variant"]:
            continue
        with m.planted():
            try:
                p = m.params(v)
                r = R.replay_variant(v, recorded[v.name], params=p, stop_at_first=True,
                                     chunks=None if only is None else {only["chunk"]},
                                     raw_only=bool(only and only.get("raw")))
            except ValueError as e:        # the changed table is rejected: the replay test errors
                return dict(variant=v.name, chunk=0, raw=0, error=str(e))
        if r.stale_inputs:
            raise AssertionError(r.describe())
        if not r.ok:
            return dict(variant=v.name, chunk=(r.bad_chunks or [r.raw_bad[0][0]])[0], raw=r.raw_bad_count)
    return None


def write_witnesses() -> None:
    recorded = R.load_recorded()
    out = {}
    for m in MUTANTS:
        w = find_witness(m, recorded)
        out[m.id] = w
        print(f"{m.id:45s} {w}", flush=True)
    R.WITNESSES.write_text(json.dumps(dict(
        what="per mutant of tests/numerics/test_numerics_mutations.py: the first recorded chunk whose replay it "
             "changes (null: no chunk; the mutant must then be in EQUIVALENT)", command=R.WITNESS_CMD,
        witnesses=out), indent=1) + "\n")


@pytest.fixture(scope="module")
def recorded():
    return R.load_recorded()


@pytest.fixture(scope="module")
def witnesses():
    return json.loads(R.WITNESSES.read_text())["witnesses"]


def test_mutants_cover_the_parameters():
    """Every numerics field of TensorCoreParams and of the table rows, and every module constant the arithmetic
    reads, has a mutant (a new parameter must get one); identity fields are the only exceptions."""
    fields = {f.name for f in dataclasses.fields(tc.TensorCoreParams)}
    identity = {"arch", "path", "in_fmt"}
    mutated = {f for m in MUTANTS for f, _ in m.entry + m.policy}
    assert fields - identity <= mutated, sorted(fields - identity - mutated)
    # lowering: None in every row but H100 mma.sync fp8 (the ptxas lowering, tests/golden/mma_sync_fp8)
    assert [r for r in ROWS if tc._TABLE[r].lowering is not None] == [("sm_90a", "mma.sync", "f8f6f4")]
    # every row of the table is mutated, or named in UNCOVERED_ROWS with the reason
    uncovered = {r for rows in UNCOVERED_ROWS.values() for r in rows}
    assert set(tc._TABLE) == set(ROWS) | uncovered and not set(ROWS) & uncovered
    assert set(tc._Entry._fields) - {"in_fmts"} <= mutated
    consts = {n for m in MUTANTS for n, _ in m.constants}
    assert {"OUTPUT_ROUNDING", "F32_RZ_OVERFLOW_TO_INF", "CANONICAL_NAN"} <= consts
    for row in ROWS:
        rid = ".".join(row)
        assert {f for m in MUTANTS if m.row == row for f, _ in m.entry + m.policy} >= \
            {"frac_bits", "block", "e_floor", "out_trunc_frac", "zero_exp_policy"}, rid


def test_witness_file_is_current(witnesses):
    """witnesses.json names exactly the mutants of this file; null only for the proven-equivalent ones and the
    documented gaps."""
    assert set(witnesses) == set(BY_ID), f"re-derive with {R.WITNESS_CMD}"
    assert {k for k, w in witnesses.items() if w is None} == set(EQUIVALENT) | set(GAPS), \
        "a mutant no data catches must be proven equivalent (EQUIVALENT) or get data that catches it"
    assert not set(EQUIVALENT) & set(GAPS)


@pytest.mark.parametrize("mid", [m.id for m in MUTANTS if m.id not in EQUIVALENT and m.id not in GAPS])
def test_mutant_fails_a_behaviour_test(recorded, witnesses, mid):
    """The planted change makes its witness fail: the replay of a recorded mmasim chunk differs from mmasim's bits
    (sm_100a rows, constants), or an H100-record test fails (sm_90a rows).  Unchanged, both pass
    (test_mmasim_replay.py, tests/hw)."""
    w = witnesses[mid]
    assert w is not None
    got = find_witness(BY_ID[mid], recorded, only=w)
    assert got is not None, f"{mid} no longer fails its witness {w} ({R.WITNESS_CMD})"
    assert "test" in w or "error" in w or got["raw"] == w["raw"], (got, w)


@pytest.mark.parametrize("mid", sorted(EQUIVALENT))
def test_equivalent_mutants_are_exact(mid):
    """Each documented equivalent mutant's reason holds (checked from the format table and the PTX shapes, not from
    data) -- and it names a real mutant."""
    why, check = EQUIVALENT[mid]
    assert mid in BY_ID
    assert check(), f"{mid}: '{why}' does not hold"


@pytest.mark.slow
@pytest.mark.parametrize("mid", [m.id for m in MUTANTS])
def test_mutant_against_all_data(recorded, mid):
    """Slow: the mutant against every chunk of every variant it touches (sm_90a: every H100-record test of its
    row) -- caught (the witness is the first failure), or, for an EQUIVALENT one or a gap, no failure anywhere."""
    m = BY_ID[mid]
    w = find_witness(m, recorded)
    if mid in EQUIVALENT or mid in GAPS:
        assert w is None, f"{mid} is listed as equivalent or a gap but changes {w}"
    else:
        assert w is not None and w == json.loads(R.WITNESSES.read_text())["witnesses"][mid]



@pytest.mark.parametrize("mid, example", [("sm_100a.tcgen05.f16:frac_bits-1", "gemm_async"),
                                          ("sm_90a.mma.sync.f16:frac_bits-1", "mma_gemm")])
def test_example_check_fails_under_a_planted_change(mid, example):
    """An example's check computes its expected D with the numerics model; the example tests run it under
    oracle_replay.numerics_backed_by_data, so a planted numerics change makes the check itself fail (the simulator
    and the model would otherwise agree with each other on the wrong numbers)."""
    import importlib
    mod = importlib.import_module(f"tcsim.examples.{example}")
    R._CHECKED.clear()
    R._CHECKED_HW.clear()
    launch = mod.make_launch(seed=0)
    with BY_ID[mid].planted(), R.numerics_backed_by_data():
        with pytest.raises(AssertionError):
            mod.reference(launch)
    with R.numerics_backed_by_data():                 # unchanged, the same check passes
        mod.reference(launch)
