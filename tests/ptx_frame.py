"""The PTX frame small test kernels share: one entry ``k(.param .u64 out{params})`` with the usual register
files (``%p``, ``%r``, ``%f``, ``%fd``, ``%rd``, 32 each), then the ``shared`` declarations, then ``body``.

With ``shared`` on one line, the first line of ``body`` is line 12 of the module (:data:`BODY_LINE`)."""

BODY_LINE = 12


def kernel(body: str, target: str = "sm_100a", shared: str = "", params: str = "") -> str:
    return f""".version 8.7
.target {target}
.address_size 64
.visible .entry k(.param .u64 out{params})
{{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .f32 %f<32>;
  .reg .f64 %fd<32>;
  .reg .b64 %rd<32>;
{shared}
{body}
}}
"""
