"""The cycle-approximate timing model: architecture configs as data (:mod:`.params`), instruction classes
(:mod:`.classes`), the register scoreboard (:mod:`.scoreboard`), SMEM bank conflicts (:mod:`.smem`), the tcgen05
tensor-pipe timing (:mod:`.tensor`), the issue model the engine consults (:mod:`.model`) and the statistics it
reports (:mod:`.stats`).  Switched on with ``run_launch(..., timing=True)`` / ``tcsim run`` (default); timing off is
the config's functional preset (``ArchConfig.untimed()``), whose issue model is :mod:`.functional`."""
from .params import ArchConfig, Param, arch_config, timing_config

__all__ = ["ArchConfig", "Param", "arch_config", "timing_config"]
