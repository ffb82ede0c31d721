"""Architecture configs: every parameter has a value, unit, kind and source; the program's target selects the
config; H100 measurements replace sm_90a estimates in one place."""
import json
import numbers

import pytest

from tcsim.isa.errors import LaunchError

from tcsim.timing.params import KINDS, SM_90A, SM_100A, arch_config

TABLES = {"sm_100a": SM_100A, "sm_90a": SM_90A}


@pytest.mark.parametrize("arch", sorted(TABLES))
def test_every_parameter_has_unit_kind_and_source(arch):
    for name, p in TABLES[arch].items():
        assert isinstance(p.value, numbers.Real), name
        assert p.unit.strip(), f"{arch} {name} has no unit"
        assert p.source.strip(), f"{arch} {name} has no source"
        assert p.kind in KINDS, f"{arch} {name} kind {p.kind!r}"
        if p.kind in ("E", "D"):
            assert p.note.strip(), f"{arch} {name}: an estimate / derived value must say what it rests on"


def test_both_architectures_define_the_same_parameters():
    assert set(SM_100A) == set(SM_90A)


def test_published_values_and_estimates_are_marked():
    b200, h100 = arch_config("sm_100a"), arch_config("sm_90a")
    assert (b200.num_sms, b200.sm_clock_mhz, h100.num_sms) == (148, 1965, 132)
    assert b200.param("tc_fit_base_1sm").kind == "M" and b200.tc_fit_base_1sm == 104
    assert h100.param("mma_sync_latency").value == 24
    assert "smem_latency" in b200.estimates() and "tmem_ld_latency" in b200.estimates()
    assert "tc_fit_base_1sm" in h100.estimates()           # sm_90a has no tcgen05
    assert "smem_bytes_per_clk" not in h100.estimates()
    assert "sm_100a" in b200.table() and "tmem_ld_latency" in b200.table()


def test_target_selects_the_config():
    assert arch_config("sm_100a").arch == "sm_100a"
    assert arch_config("sm_100").arch == "sm_100a"
    assert arch_config("sm_90").arch == "sm_90a"
    assert arch_config(None).arch == "sm_100a"
    from timing_kernels import run
    res, _ = run("  ret;\n", target="sm_90a")
    assert res.timing.arch == "sm_90a" and res.timing.clock_mhz == 1980


def test_h100_measurements_override_estimates(tmp_path):
    f = tmp_path / "measured.json"
    f.write_text(json.dumps({"smem_latency": {"value": 31, "source": "calib/microbench smem_latency"},
                             "mbarrier_wake_latency": 17}))
    cfg = arch_config("sm_90a", measured=f)
    assert cfg.smem_latency == 31 and cfg.param("smem_latency").kind == "M"
    assert cfg.param("smem_latency").source == "calib/microbench smem_latency"
    assert cfg.mbarrier_wake_latency == 17 and cfg.param("mbarrier_wake_latency").source == str(f)
    assert "mbarrier_wake_latency" not in cfg.estimates()
    assert arch_config("sm_90a", measured=tmp_path / "absent.json").smem_latency == SM_90A["smem_latency"].value
    f.write_text(json.dumps({"smem_latncy": 3}))
    with pytest.raises(LaunchError, match="has no parameter 'smem_latncy'"):
        arch_config("sm_90a", measured=f)
    f.write_text(json.dumps({"smem_latency": {"source": "x"}}))
    with pytest.raises(LaunchError, match="the override of 'smem_latency' has no 'value'"):
        arch_config("sm_90a", measured=f)
    f.write_text("{not json")
    with pytest.raises(LaunchError, match="cannot be read"):
        arch_config("sm_90a", measured=f)


def test_unknown_parameter_is_an_error():
    with pytest.raises(AttributeError, match="no parameter"):
        arch_config("sm_100a").no_such_thing
