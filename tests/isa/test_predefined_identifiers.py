"""PTX ISA 9.1 §4.4 (Identifiers): the predefined identifier ``WARP_SZ`` (the warp size, 32) is accepted wherever an
integer constant is -- an instruction operand, a constant expression, an array dimension -- and is no symbol
(ptxas 13.0 accepts the kernel below; tcsim used to call it an undefined symbol)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from tcsim.isa.errors import PtxSyntaxError
from tcsim.isa.ir import Imm
from tcsim.isa.parser import parse
from tcsim.launch import Launch, run_launch

PTX = r""".version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;
	.local .align 4 .b8 scratch[WARP_SZ];
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, WARP_SZ;
	mad.lo.u32 %r3, %r1, WARP_SZ, %r2;
	and.b32 %r4, %r3, (WARP_SZ - 1) << 2;
	add.u32 %r5, %r4, -WARP_SZ;
	mul.wide.u32 %rd2, %r1, 4;
	add.u64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r5;
	ret;
}
"""


def test_warp_sz_is_the_constant_32():
    fn = parse(PTX).functions["k"]
    mov = next(i for i in fn.body if i.opcode == "mov" and isinstance(i.operands[1], Imm))
    assert mov.operands[1] == Imm(32)
    assert next(v for v in fn.locals if v.name == "scratch").size_bytes == 32


def test_warp_sz_kernel_runs_to_the_hand_computed_answer():
    out = np.zeros(64, np.uint32)
    res = run_launch(Launch(ptx=PTX, block=(64, 1, 1), args=[out]))
    tid = np.arange(64, dtype=np.int64)
    want = (((tid * 32 + 32) & (31 << 2)) - 32) & 0xFFFFFFFF      # (WARP_SZ - 1) << 2 = 124
    assert np.array_equal(res.outputs[0], want.astype(np.uint32))


def test_a_misspelt_warp_sz_is_still_an_undefined_symbol():
    with pytest.raises(PtxSyntaxError, match="undefined symbol 'WARP_SIZE'"):
        parse(PTX.replace("mov.u32 %r2, WARP_SZ;", "mov.u32 %r2, WARP_SIZE;"))


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_ptxas_accepts_the_kernel(tmp_path):
    (tmp_path / "k.ptx").write_text(PTX)
    r = subprocess.run(["ptxas", "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
