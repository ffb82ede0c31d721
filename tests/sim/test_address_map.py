"""The address layout outside what the H100 record covers (tests/hw/test_address_layout.py replays that): addresses
outside the windows stay located errors, the ptxas layout rules on small cases, the sm_100a assumption."""
from __future__ import annotations

import numpy as np
import pytest

from tcsim.address_map import SM_90A, SM_100A, address_map
from tcsim.isa.errors import MemoryFault
from tcsim.isa.parser import parse
from tcsim.launch import Launch, run_launch
from tcsim.machine import layout_program

HDR = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def _kernel(body: str, decls: str = "", module: str = "") -> str:
    return HDR + module + f"""
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<16>; .reg .b64 %rd<16>; .reg .pred %p<4>;
  {decls}
  ld.param.u64 %rd1, [out];
{body}
  ret;
}}
"""


def _run(text, **kw):
    return run_launch(Launch(ptx=text, args=[np.zeros(8, np.uint64)], **kw))


def _line(text, needle):
    return next(i for i, l in enumerate(text.split("\n"), 1) if needle in l)


def test_reserved_shared_bytes_are_a_located_fault():
    text = _kernel("  mov.u32 %r1, 0x3fc;\n  ld.shared.u32 %r2, [%r1];\n  st.global.u32 [%rd1], %r2;",
                   ".shared .align 4 .b32 s[4];\n  mov.u32 %r9, s;")
    with pytest.raises(MemoryFault) as e:
        _run(text)
    assert "system-reserved" in e.value.message and "0x3fc" in e.value.message
    assert e.value.loc.line == _line(text, "ld.shared.u32")


def test_past_the_user_bytes_is_a_located_fault():
    text = _kernel("  mov.u32 %r1, s;\n  ld.shared.u32 %r2, [%r1+16];\n  st.global.u32 [%rd1], %r2;",
                   ".shared .align 4 .b32 s[4];")
    with pytest.raises(MemoryFault, match=r"out-of-bounds .* at offset 0x410.*\[0x400, 0x410\)") as e:
        _run(text)
    assert e.value.loc.line == _line(text, "ld.shared.u32")


def test_mapa_of_a_generic_address_outside_the_shared_window_is_located():
    text = _kernel("  mapa.u64 %rd2, %rd1, 0;\n  st.global.u64 [%rd1], %rd2;")
    with pytest.raises(MemoryFault, match="not in the shared window") as e:
        _run(text, cluster=(1, 1, 1))
    assert e.value.loc.line == _line(text, "mapa.u64")


def test_local_access_outside_the_frame_is_located():
    text = _kernel("  mov.u64 %rd2, loc;\n  ld.local.u32 %r1, [%rd2+16];\n  st.global.u32 [%rd1], %r1;",
                   ".local .align 8 .b8 loc[16];")
    with pytest.raises(MemoryFault, match="out-of-bounds local read .* local address 0xfffdc0") as e:
        _run(text)
    assert e.value.loc.line == _line(text, "ld.local.u32")


def test_local_frame_lies_below_the_stack_top():
    """A 40-byte frame: its first byte at top - 40 (the frame rounded to 8), cvta.local adds the window base."""
    text = _kernel("  mov.u64 %rd2, loc;\n  st.local.u32 [loc], %r1;\n  cvta.local.u64 %rd3, %rd2;\n"
                   "  st.global.u64 [%rd1], %rd2;\n  st.global.u64 [%rd1+8], %rd3;",
                   ".local .align 8 .b8 loc[40];")
    out = _run(text).outputs[0]
    from tcsim.memory import LOCAL_WINDOW
    assert int(out[0]) == SM_90A.local_stack_top - 40 and int(out[1]) == LOCAL_WINDOW + int(out[0])


def test_static_layout_rules():
    """Referenced kernel-scope variables first in declaration order, then module-scope ones; unreferenced ones
    take no address; the dynamic array right after the referenced ones at its alignment (H100/H200:
    tests/hw/golden_h100/address_layout.json, cases decl / rev / mod / dead / mod2)."""
    text = _kernel("  mov.u32 %r1, a;\n  mov.u32 %r2, b;\n  mov.u32 %r3, g;\n  mov.u32 %r4, dyn;",
                   ".shared .align 4 .b8 unused[64];\n  .shared .align 2 .b8 a[3];\n  .shared .align 16 .b8 b[4];",
                   ".shared .align 8 .b8 g[8];\n.shared .align 8 .b8 gunused[256];\n"
                   ".extern .shared .align 64 .b8 dyn[];\n")
    m = parse(text, "<t>")
    lay = layout_program(m, m.kernel("k"))
    sym = lay["shared_symbols"]
    assert (sym["a"].offset, sym["b"].offset, sym["g"].offset, sym["dyn"].offset) == (0x400, 0x410, 0x418, 0x440)
    assert "unused" not in sym and "gunused" not in sym
    # the unreferenced kernel-scope bytes follow g ([0x420, 0x460), overlapped by dyn) and count in the static
    # size; the unreferenced module-scope variable does not
    assert lay["shared_static_size"] == 0x460 - 0x400


def test_shared_size_registers():
    text = _kernel("  mov.u32 %r1, %total_smem_size;\n  mov.u32 %r2, %aggr_smem_size;\n"
                   "  mov.u32 %r3, %dynamic_smem_size;\n  mov.u32 %r5, s;\n"
                   "  cvt.u64.u32 %rd2, %r1;\n  st.global.u64 [%rd1], %rd2;\n"
                   "  cvt.u64.u32 %rd2, %r2;\n  st.global.u64 [%rd1+8], %rd2;\n"
                   "  cvt.u64.u32 %rd2, %r3;\n  st.global.u64 [%rd1+16], %rd2;",
                   ".shared .align 4 .b8 s[100];", ".extern .shared .align 16 .b8 dyn[];\n")
    out = _run(text, dynamic_smem=300).outputs[0]
    static = 112                                                   # 100 bytes, then dyn at 16-byte alignment
    assert list(out[:3]) == [(static + 300 + 127) // 128 * 128, 0x400 + static + 300, 300]


def test_sm100a_assumes_the_sm90a_layout():
    for f in ("reserved_smem", "reserved_smem_end", "rank_shift", "local_stack_top", "total_smem_granule",
              "param_generic_base", "dynamic_smem_align"):
        assert getattr(SM_100A, f) == getattr(SM_90A, f), f
    assert "assumed" in SM_100A.source and address_map("sm_100f") is SM_100A


def test_memory_layer_constants_are_the_maps():
    """The memory layer's window constants (shared by every target) are the maps' values."""
    from tcsim import memory as M
    from tcsim.address_map import MAPS

    for m in MAPS.values():
        assert m.rank_shift == M.SHARED_RANK_SHIFT and m.param_generic_base == M.PARAM_WINDOW
    assert M.SHARED_WINDOW % (1 << 32) == 0 and M.LOCAL_WINDOW % (1 << 24) == 0
    assert address_map("sm_80") is SM_90A and address_map("sm_120a") is SM_100A
