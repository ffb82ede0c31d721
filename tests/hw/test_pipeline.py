"""calib/pipeline.py, the steps every campaign shares: names recorded before the move read with today's, a launch
on the simulator as a result (a diagnosis is a result too), many launches with a time limit, records written and
read back (a folder that is no record is one typed line), staleness, bit-for-bit comparison (NaN payloads and
signed zeros count), and installing files."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from calib import pipeline as P
from tcsim.launch import Launch

HDR = ".version 8.5\n.target sm_90a\n.address_size 64\n"
STORE = HDR + """.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  st.global.u32 [%rd1], 7;
  ret;
}
"""


def test_recorded_names_read_with_todays():
    assert P.current_name("examples.mma_gemm:make_launch") == "tcsim.examples.mma_gemm:make_launch"
    assert P.current_name("hw.tma_cases") == "calib.tma"
    assert P.current_name("hw.probes.alu_probe") == "calib.probes.alu_probe"
    # today's names and look-alikes are left alone
    assert P.current_name("tcsim.examples.mma_gemm:make_launch") == "tcsim.examples.mma_gemm:make_launch"
    assert P.current_name("examples_extra.x") == "examples_extra.x"
    assert P.current_command("python -m hw.golden regen --case a --root /root/out") == \
        "python -m calib.golden regen --case a --root /root/out"
    assert P.current_command("bash hw/probes/alu_device_run.sh (python -m hw.probes.alu_probe device --out DIR)") \
        == "bash calib/probes/alu_device_run.sh (python -m calib.probes.alu_probe device --out DIR)"
    assert P.current_command("hw/microbench smem_conflict_1way (H100, 2026-11-23)") == \
        "calib/microbench smem_conflict_1way (H100, 2026-11-23)"
    assert P.current_path("hw/tma_cases.py") == "calib/tma/" and P.current_path("hw/golden.py") == "calib/golden.py"
    assert P.current_path("hw/launcher.py") == "hw/launcher.py"                 # the back end stayed
    assert P.resolve("examples.mma_gemm:make_launch").__module__ == "tcsim.examples.mma_gemm"
    with pytest.raises(ValueError, match="module:function"):
        P.resolve("tcsim.examples.mma_gemm")


def test_execute_on_the_simulator_returns_outputs_or_the_diagnosis():
    out = np.zeros(4, np.uint32)
    r = P.execute(Launch(ptx=STORE, kernel="k", block=(32, 1, 1), args=[out]), "sim")
    assert r.ok and r.device == "tcsim" and list(np.asarray(r.outputs[0]).view(np.uint32)) == [7, 0, 0, 0]
    assert out[0] == 0                                  # the launch's own array is not written
    bad = STORE.replace("st.global.u32 [%rd1], 7;", "st.global.u32 [%rd1+2], 7;")      # misaligned
    r = P.execute(Launch(ptx=bad, kernel="k", block=(32, 1, 1), args=[out]), "sim")
    assert not r.ok and r.error.startswith("sim:") and r.detail
    with pytest.raises(ValueError, match="backend"):
        P.execute(Launch(ptx=STORE, kernel="k", args=[out]), "cpu")


def test_run_all_keeps_order_and_reports_what_did_not_start():
    assert P.run_all([3, 1, 2], lambda x: x * 10, jobs=3) == [30, 10, 20]

    def slow(x):
        time.sleep(0.2)
        return x
    got = P.run_all([1, 2, 3], slow, jobs=1, time_limit=0.1, not_run=lambda x: -x)
    assert got == [1, -2, -3]
    r = P.not_run(5.0)
    assert r.error == P.NOT_RUN and r.error in P.UNRECORDED and not r.ok


def test_records_round_trip_and_bad_folders_are_one_line(tmp_path):
    arrays = {"a:out": np.arange(6, dtype=np.uint16).reshape(2, 3)}
    meta = {"cases": {"a": 1}, **P.provenance("python -m calib.x record")}
    P.write_record(tmp_path / "r", meta, arrays, "outputs.npz")
    m, a = P.load_record(tmp_path / "r", "outputs.npz")
    assert m == meta and m["command"] == "python -m calib.x record" and m["date"].endswith("+00:00")
    assert set(a) == {"a:out"} and P.bits_equal(a["a:out"], arrays["a:out"])
    assert (tmp_path / "r" / P.META).read_text().endswith("\n")
    with pytest.raises(P.RecordError, match="holds no meta.json"):
        P.load_record(tmp_path / "nowhere", "outputs.npz")
    (tmp_path / "r" / "outputs.npz").write_bytes(b"not a zip")
    with pytest.raises(P.RecordError, match="cannot be read as a numpy .npz archive"):
        P.load_record(tmp_path / "r", "outputs.npz")
    (tmp_path / "r" / P.META).write_text("{")
    with pytest.raises(P.RecordError, match="cannot be read"):
        P.read_json(tmp_path / "r" / P.META)
    P.write_packed(tmp_path / "one.npz", {"seed": 3}, {"s3": np.ones(2, np.uint8)})
    z, m = P.load_packed(tmp_path / "one.npz")
    assert m == {"seed": 3} and list(z["s3"]) == [1, 1]
    with pytest.raises(P.RecordError, match="one-file record"):
        P.load_packed(tmp_path / "r" / "outputs.npz")
    assert P.command_line("calib.x", ["record", "--case", "a b"]) == "python -m calib.x record --case 'a b'"
    assert P.gpu_fields("H100", 580, (9, 0)) == {"gpu": "H100", "driver_version": 580, "compute_capability": "9.0"}


def test_staleness_and_bit_for_bit_comparison():
    assert P.check_fresh("c", {"PTX": "aa", "inputs": "bb"}, {"PTX": "aa", "inputs": "bb"}) is None
    assert P.check_fresh("c", {"PTX": "aa", "inputs": "bb"}, {"PTX": "ab", "inputs": "bb"}) == \
        "c: the PTX it builds changed since the record was made"
    want = np.array([[1.0, -0.0], [np.nan, 2.0]], np.float32)
    got = want.copy()
    assert P.first_difference(got, want) is None
    got.view(np.uint32)[1, 0] ^= 1                      # another NaN payload: the bits differ
    got[0, 1] = 0.0                                     # +0 for -0: equal as floats, not as bits
    assert P.first_difference(got, want) == (2, (0, 1))
    assert not P.bits_equal(got, want) and not P.bits_equal(want, want.astype(np.float64))
    assert P.hex_bits(np.float32(-0.0)) == "0x80000000"
    assert P.sha256(np.zeros(2, np.uint8)) != P.sha256(np.zeros(2, np.int8))     # dtype is part of the digest
    assert P.sha256("abc") == P.sha256(b"abc") == \
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"       # FIPS 180-2 test vector


def test_install_copies_checked_files(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"x": 1}))
    (tmp_path / "big.npz").write_bytes(b"0" * 2048)
    with pytest.raises(P.RecordError, match="limit"):
        P.install_files([(tmp_path / "meta.json", "meta.json"), (tmp_path / "big.npz", "o.npz")], tmp_path / "d",
                        limit=1024)
    assert not (tmp_path / "d").exists()                # nothing copied when one file is refused
    out = P.install_files([(tmp_path / "meta.json", "meta.json"), (tmp_path / "big.npz", "o.npz")], tmp_path / "d")
    assert [p.name for p in out] == ["meta.json", "o.npz"]
    assert (tmp_path / "d" / "o.npz").read_bytes() == b"0" * 2048
    assert all(p.stat().st_mode & 0o777 == 0o644 for p in out)
