"""The fixed fit / validation / test split of the timing corpus, decided by the kernel's name alone.

``int(sha256(name).hexdigest(), 16) % 10``: 0-5 -> fit, 6-7 -> validation, 8-9 -> test.  The rule was committed
before any parameter was fitted on the corpus (and before its hardware data existed).  Exceptions, each stated:

* the 11 validation kernels of calib/microbench (``val_*``) are in **fit**: the timing model's mechanisms were
  chosen over several rounds by how they did on those kernels, so they cannot measure how it does on kernels it has
  not seen;
* the held-out kernels (``cs_*``, NVIDIA cuda-samples compiled outside the repository) are in none of the three:
  they are reported on their own (:data:`HELDOUT`) and never fitted on;
* :data:`MOVED`: a test-split kernel that drove a change of the model moves to validation (issue 21's rule), with
  the reason.  Empty until that happens.
"""
from __future__ import annotations

import hashlib

SPLITS = ("fit", "validation", "test")
#: the held-out kernels (public code from outside the project, ``cs_*``: NVIDIA cuda-samples) form a fourth set
HELDOUT = "heldout"
#: name -> (split, why) for kernels moved out of the split their hash gives
MOVED: dict = {}


def hashed_split(name: str) -> str:
    h = int(hashlib.sha256(name.encode()).hexdigest(), 16) % 10
    return "fit" if h < 6 else "validation" if h < 8 else "test"


def split_of(name: str) -> str:
    if name.startswith("cs_"):
        return HELDOUT
    if name in MOVED:
        return MOVED[name][0]
    if name.startswith("val_"):
        return "fit"
    return hashed_split(name)
