"""tcsim.convergence: which instructions make a warp reconverge (PTX ISA 9.1: ``.sync`` -- "the executing thread
waits until all threads in the warp execute the same instruction"; member-mask collectives wait for their mask), and
the control-flow reachability the engine uses to tell lanes that will still arrive from lanes on a path that skips
the collective."""
from tcsim.convergence import ALL, Reachability, collective_members
from tcsim.isa import ir
from tcsim.isa.parser import parse

PTX = """.version 8.7
.target sm_100a
.address_size 64
.visible .entry k()
{
  .reg .b32 %r<8>;
  .reg .pred %p<4>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b32 slot;
  mov.u32 %r0, %tid.x;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 bra SKIP;
  shfl.sync.idx.b32 %r1, %r0, 0, 31, %r2;
  bar.sync 0;
  tcgen05.ld.sync.32x32b.x1.b32 {%r3}, [%r0];
SKIP:
  elect.sync %r4|%p2, -1;
  @%p1 exit;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r0, 32;
LOOP:
  add.u32 %r5, %r5, 1;
  @%p1 bra LOOP;
  ret;
}
"""


def _fn():
    return parse(PTX).kernel(None)


def _pc(fn, opcode_text):
    return next(i for i, ins in enumerate(fn.body) if str(ins).startswith(opcode_text))


def test_collectives():
    fn = _fn()
    kinds = {ins.full_opcode: collective_members(ins) for ins in fn.body}
    assert kinds["tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"] == ALL
    assert kinds["tcgen05.ld.sync.32x32b.x1.b32"] == ALL              # .aligned may be omitted on ld/st
    assert kinds["tcgen05.dealloc.cta_group::1.sync.aligned.b32"] == ALL
    shfl = kinds["shfl.sync.idx.b32"]
    assert isinstance(shfl, ir.Reg) and shfl.name == "%r2"            # its member mask
    elect = kinds["elect.sync"]
    assert isinstance(elect, ir.Imm) and int(elect.value) == -1
    assert kinds["bar.sync"] is None and kinds["mov.u32"] is None and kinds["bra"] is None


def test_reachability():
    fn = _fn()
    r = Reachability(fn.body, fn.labels, fn.branch_targets)
    shfl, elect = _pc(fn, "shfl.sync"), _pc(fn, "elect.sync")
    dealloc, loop_add = _pc(fn, "tcgen05.dealloc"), _pc(fn, "add.u32")
    alloc = _pc(fn, "tcgen05.alloc")
    assert r.reaches(alloc, shfl) and r.reaches(shfl, elect) and r.reaches(alloc, dealloc)
    assert not r.reaches(elect, shfl)                                 # forward only: no way back
    assert r.reaches(loop_add, loop_add) and not r.reaches(loop_add, dealloc)
    ret = _pc(fn, "ret")
    assert r.successors(ret) == () and r.successors(_pc(fn, "@%p1 exit")) == (_pc(fn, "@%p1 exit") + 1,)
