"""Watching a run: its budget, a progress line, Ctrl-C, and the livelock detector.

The engine calls :meth:`RunWatch.check` every :data:`CHECK_EVERY` retired warp-instructions (and when the
instruction budget is reached); everything here happens in that call, so a run costs one integer comparison per
instruction for it.

* **Budget**: ``max_instructions`` warp-instructions and/or ``max_seconds`` of simulation work: the CPU time this
  process spends in :meth:`tcsim.engine.Simulation.run` (``time.process_time``), not wall-clock time, so that a
  loaded machine, a debugger pause or a slow observer does not spend it, less the time numba spends compiling (a
  cold cache's first kernels are no simulation work: :class:`_CompileClock`).  With neither, the default budget of
  :data:`DEFAULT_MAX_SECONDS`: a kernel that does not end is stopped, located, well within a minute of work.  Past it
  the run ends with a :class:`~tcsim.isa.errors.RunawayError` naming each live warp's position and instruction, as
  the debugger's ``where()`` does.
* **How a kernel that does not end is stopped** (the default budget's story): a deadlock at once (no event left);
  a warp in a loop that can never end, or cannot end within the budget (a counter stepping over or away from its
  bound, an invariant test, a poll of memory or of an mbarrier nobody can change) after
  :data:`tcsim.loop_watch.LOOP_AFTER` + :data:`tcsim.loop_watch.LOOP_EVERY` seconds or so, by the loop monitor
  (:class:`~tcsim.isa.errors.NonTerminatingLoopError`, located at the compare that governs the exit); a poll in
  which the machine state repeats by the livelock detector (below) within seconds -- also when the spinning warps
  count their attempts, or wait on an atomic or on data that cycles; a wait for the clock to pass a deadline is no
  hang: when nothing else runs, the loop monitor skips simulated time to it; anything else (a loop whose exit
  depends on data that does not repeat) by the budget: :data:`DEFAULT_MAX_SECONDS` of work unless the caller sets
  one.
* **Progress**: once a run has taken :data:`PROGRESS_AFTER` seconds, a line (instructions retired, simulated
  cycles, rate, CTAs finished) on stderr when it is a terminal (redrawn in place), or wherever ``progress`` says
  (True: stderr in any case, a new line every :data:`PROGRESS_EVERY` seconds when not a terminal; a file object:
  there; False: nowhere).
* **Ctrl-C** (SIGINT, while :meth:`tcsim.engine.Simulation.run` runs in the main thread): the run stops at the
  next check with a :class:`~tcsim.isa.errors.RunInterrupted` holding the position of every warp (the debugger's
  ``where()`` picture); a second Ctrl-C interrupts at once (KeyboardInterrupt).
* **Livelock**: every :data:`LIVELOCK_SAMPLE` or more instructions (a power of two, so a loop's phase recurs),
  when no event other than the warps' own is pending (no async copy, tensor op, timer in flight) and every warp
  that could run has retired instructions since the last sample, the watch takes a fingerprint of the warps
  (PCs, liveness, wait/park masks, registers, local memory).  Of the registers it takes only those that can
  still change what each warp's lanes do in the loops they are in (:meth:`tcsim.loop_watch.LoopMap.relevant_at`:
  per strongly connected component of the control flow, every operand of a memory, atomic, branch, barrier,
  collective or async instruction, and back through the pure instructions feeding them): a register that a spin
  loop only counts with cannot keep it from repeating.  A fingerprint seen before in this stretch is a
  candidate: it adds a fingerprint of the memories (shared memory, mbarriers, named and cluster barriers, tensor
  memory of every CTA; global memory); when the same warp and memory fingerprints come round again, at least
  :data:`LIVELOCK_MIN_CYCLES` cycles later, the whole machine state has repeated with nothing in flight: it is
  in a cycle it can never leave -- every live warp polls (``mbarrier.try_wait``,
  a flag load, a failing CAS) for a change no one will make.  (When only counted registers differ and the loop
  monitor can say why the first stuck loop cannot end, its :class:`~tcsim.isa.errors.NonTerminatingLoopError` is
  the report.)  That ends the run with a
  :class:`~tcsim.isa.errors.LivelockError`, reported like a deadlock: each warp's position.  A fingerprint that
  includes a clock read, a counter or anything still in flight differs, so a loop that can still end is never
  called a livelock (the budget bounds those).
* **The dense window** (both tiers): samples a power of two instructions apart see a cycle of P instructions
  only every P / gcd(P, interval) samples -- a data cycle of a few thousand instructions with an odd factor takes
  millions of instructions to come round.  So when two quiet samples in a row find the memories unchanged, the
  watch also looks at every retired instruction (:meth:`RunWatch._dense_step`, about a microsecond each): each time
  the first live warp passes the head of its innermost loop, the machine's state there (PCs first, then the same
  fingerprints) is compared with a checkpoint taken at arrival 1, 2, 4, 8 ... (Brent's cycle finding), so a cycle
  of L loop iterations that began after M is found within about 2 max(M, L) + L iterations, a bound in simulated
  work whatever the period is in instructions.  Memory changing closes the window; so does reaching
  :data:`DENSE_ARRIVALS` arrivals without a repeat (longer cycles are left to the budget), after which it opens
  again only once memory has changed.  The fast tier runs the window's instructions one by one as the reference
  does (its supersteps stop at a check that looks at the warps), so both tiers find the same cycle at the same
  instruction; the bound keeps what a long register-only phase costs it to a few thousand loop iterations.
"""
from __future__ import annotations

import hashlib
import signal
import sys
import threading
import time

import numpy as np

from tcsim.isa.errors import LivelockError, RunawayError, RunInterrupted
from .context import lanes_str

#: the default budget of a run: seconds of simulation work (CPU time in run(), numba compilation left out), so that a
#: kernel that never ends is stopped, located, well within a minute -- what a user waits for before giving up
DEFAULT_MAX_SECONDS = 40.0
#: instructions between two checks
CHECK_EVERY = 1024
#: a progress line once the run is this long (s), then every PROGRESS_EVERY s (a terminal: redrawn more often)
PROGRESS_AFTER = 2.0
PROGRESS_EVERY = 5.0
PROGRESS_EVERY_TTY = 0.5
#: instructions between two livelock samples (at least; a power of two); distinct warp states remembered; the
#: fewest simulated cycles between the two equal whole-machine states
LIVELOCK_SAMPLE = 1 << 11
#: the sampling interval is at least the instructions retired so far over this (a bounded share of a long run)
LIVELOCK_SHARE = 8
#: ... and at least 64 instructions per live warp and per this many registers of a warp
LIVELOCK_REGS = 16
LIVELOCK_STATES = 64
LIVELOCK_MIN_CYCLES = 1000
#: arrivals at the loop head after which the dense window gives up (cycles of up to about a third as many iterations
#: are found in it)
DENSE_ARRIVALS = 1 << 13
#: warps the reports list one by one
REPORT_WARPS = 32


def warp_picture(sim, limit: int = REPORT_WARPS, sync: bool = False) -> list[str]:
    """One line per warp: its live lanes, the instruction each group of lanes is at, what it waits on (``sync``: and
    the last synchronising operation it did)."""
    body = sim.program.body
    lines = []
    live = [w for w in sim.warps if w.alive.any()]
    done = len(sim.warps) - len(live) + getattr(getattr(sim, "retention", None), "warps", 0)
    for w in live[:limit]:
        groups = []
        for pc in sorted(set(int(p) for p in w.pc[w.alive]))[:3]:
            lanes = lanes_str(w.alive & (w.pc == pc))
            if pc < len(body):
                ins = body[max(pc - 1, 0)] if (w.waiting & (w.pc == pc)).any() and pc > 0 else body[pc]
                groups.append(f"{lanes} at {ins.loc} `{ins}`")
            else:
                groups.append(f"{lanes} past the end")
        waits = "; ".join((x.reason() if callable(x.reason) else x.reason) for x in w.waits)
        last = f", last sync op {w.last_sync}" if sync and getattr(w, "last_sync", None) else ""
        lines.append(f"{w.label}: " + ", ".join(groups) + (f" -- waiting: {waits}" if waits else "") +
                     f" ({w.retired} instructions{last})")
    if len(live) > limit:
        lines.append(f"... and {len(live) - limit} more live warps")
    if done:
        lines.append(f"({done} warps exited)")
    pending = sim.clusters_pending() if hasattr(sim, "clusters_pending") else 0
    if pending:
        lines.append(f"({pending} clusters of the grid not started yet)")
    return lines


def _digest_cta(h, c) -> None:
    """Add CTA ``c``'s shared memory, mbarriers, named barriers and tensor memory to the digest ``h``."""
    h.update(memoryview(c.smem.data))
    for off in sorted(c.mbarriers):
        mb = c.mbarriers[off]
        h.update(repr((off, mb.phase, mb.pending, mb.expected, mb.tx, mb.valid)).encode())
    h.update(repr([(b.arrived, b.generation) for b in c.barriers]).encode())
    tm = c.tmem
    if tm is not None:
        h.update(memoryview(tm.data))
        h.update(repr((sorted(tm.allocations.items()), len(tm.pending))).encode())


#: at most this many seconds of numba compilation are left out of the budget (a cold cache's first kernels); beyond,
#: compiling is work like any other (an input that makes the fast tier compile without end is still stopped)
COMPILE_ALLOWANCE = 20.0


class _CompileClock:
    """Seconds numba spent compiling while a run was going on (numba's ``numba:compile`` events, outermost only), on
    the budget's clock, up to :data:`COMPILE_ALLOWANCE`: what :meth:`RunWatch.elapsed` leaves out.  A listener
    registered while run() runs."""

    def __init__(self, clock):
        self.clock = clock
        self.total = 0.0
        self._depth = 0
        self._t0 = 0.0
        self._listener = None
        self._running = False

    def start(self) -> None:
        self._running = True
        self.poll()

    def poll(self) -> None:
        """Register the listener once numba is loaded (a run does not import numba for it: tcsim loads it only when
        a compiled kernel is first needed -- the run watch polls at each check)."""
        if self._listener is not None or not self._running:
            return
        event = sys.modules.get("numba.core.event")
        if event is None:
            return
        owner = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                if owner._depth == 0:
                    owner._t0 = owner.clock()
                owner._depth += 1

            def on_end(self, ev):
                owner._depth = max(owner._depth - 1, 0)
                if owner._depth == 0:
                    owner.total += owner.clock() - owner._t0

        self._listener = _Listener()
        event.register("numba:compile", self._listener)

    def stop(self) -> None:
        self._running = False
        if self._listener is None:
            return
        event = sys.modules["numba.core.event"]
        try:
            event.unregister("numba:compile", self._listener)
        except ValueError:
            pass
        self._listener = None

    def seconds(self) -> float:
        """Compile seconds so far (a compile in progress counted up to now)."""
        self.poll()
        return min(self.total + (self.clock() - self._t0 if self._depth else 0.0), COMPILE_ALLOWANCE)


class RunWatch:
    """Budget, progress, interrupt and livelock checks of one :class:`tcsim.engine.Simulation`."""

    def __init__(self, sim, max_instructions: int | None = None, max_seconds: float | None = None,
                 progress=None):
        self.sim = sim
        #: neither budget given: DEFAULT_MAX_SECONDS
        self.default_budget = max_instructions is None and max_seconds is None
        if self.default_budget:
            max_seconds = DEFAULT_MAX_SECONDS
        self.max_instructions = max_instructions
        self.max_seconds = max_seconds
        self._clock = time.process_time
        self._compile = _CompileClock(self._clock)
        #: None: stderr; False: no progress line; else a file object
        self.progress = progress
        self.interrupted = False
        #: the error a check ended the run with (the other warps stop at their next instruction)
        self.fatal = None
        self.next_check = self._next(0)
        self._t_start = None            # the budget's clock when the current run() began
        self._cpu = 0.0                 # seconds of the earlier run() calls (the budget's clock)
        self._last_line = None
        self._line_open = False
        self._seen: dict = {}           # warp fingerprint -> cycle first seen, since the state last changed course
        self._candidates: dict = {}     # warp fingerprint seen again -> (memory fingerprint, cycle) then
        self._last_retired = None       # per warp: instructions retired at the last sample
        self._next_sample = LIVELOCK_SAMPLE
        self._dense_full = 0                # the next check of the usual kind while the dense window is open
        self._relevant_cache: dict = {}     # set of PCs -> registers the fingerprint compares
        self._brent = None                  # (warp fingerprint, cycle) at the last power-of-two sample
        self._count = 0                     # samples since the state last changed course
        self._last_mkey = None              # memory fingerprint at the last quiet sample (the dense window's trigger)
        self._dense_spent = None            # memory fingerprint at which a dense window gave up (not reopened on it)
        #: the dense window (:meth:`_dense_step`): None, or [warp, head PC, last retired of that warp, arrivals,
        #: next checkpoint arrival, checkpoint (PCs, warp fingerprint, memory fingerprint, cycle) or None]
        self._dense = None
        from .loop_watch import LoopMonitor
        #: the loop monitor (tcsim.loop_watch): loops that can never end, or not within the budget
        self.loops = LoopMonitor(self, LIVELOCK_MIN_CYCLES, RunWatch.cluster_fingerprint)

    # ------------------------------------------------------------------------------------------ run bracket
    def started(self) -> None:
        self._t_start = self._clock()
        self._compile.start()

    def stopped(self) -> None:
        if self._t_start is not None:
            self._cpu += self._clock() - self._t_start
        self._t_start = None
        self._compile.stop()
        if self._line_open:
            out = self._out()
            if out is not None:
                try:
                    out.write("\n")
                    out.flush()
                except (OSError, ValueError):
                    pass
            self._line_open = False

    def elapsed(self) -> float:
        """Seconds of simulation work so far (the budget's measure): the process's CPU time inside run(), less the
        time numba spent compiling."""
        run = self._clock() - self._t_start if self._t_start is not None else 0.0
        return max(self._cpu + run - self._compile.seconds(), 0.0)

    def _next(self, retired: int) -> int:
        n = retired + CHECK_EVERY
        if self.max_instructions is not None:
            n = min(n, self.max_instructions + 1)
        return n

    # ------------------------------------------------------------------------------------------ the check
    def check(self):
        """The error that ends the run now (budget, interrupt, livelock), or None; sets the next check."""
        if self.fatal is not None:          # every warp stops at its next instruction
            return self.fatal
        d = self._dense
        if d is not None:
            # the dense window: a look at every retired instruction (the other checks keep their own pace)
            err = self._dense_step(d)
            if err is None and self.sim.retired < self._dense_full:
                self.next_check = self.sim.retired + 1
                return None
            if err is not None:
                self.fatal = err
                self.next_check = 0
                return err
        err = self._check()
        if self._dense is not None and err is None:
            self._dense_full = self.next_check
            self.next_check = self.sim.retired + 1
        if err is not None:
            self.fatal = err
            self.next_check = 0
        return err

    def looks_at_warps(self, retired: int | None = None) -> bool:
        """Whether the next :meth:`check` (made with ``retired`` instructions retired, default: now) may look at the
        warps or end the run (a stop already decided, Ctrl-C, the instruction or seconds budget spent, a livelock
        or loop-monitor sample due: the latter may skip simulated time) -- else it only sets the next check and may print the progress line (the fast tier's
        supersteps make such checks in place, tcsim.fast.lockstep)."""
        if self.fatal is not None or self.interrupted or self.max_instructions is not None or self._dense is not None:
            return True
        if (self.sim.retired if retired is None else retired) >= self._next_sample:
            return True
        t = self.elapsed()
        # (a loop-monitor sample may skip simulated time over a clock wait: not in the middle of a superstep)
        return self.max_seconds is not None and t > self.max_seconds or self.loops.due(t)

    def _check(self):
        sim = self.sim
        retired = sim.retired
        self.next_check = self._next(retired)
        if self.max_instructions is not None and retired > self.max_instructions:
            return self.runaway(f"more than {self.max_instructions} warp-instructions executed")
        if self.interrupted:
            return self.interrupt_error()
        t = self.elapsed()
        if self.max_seconds is not None and t > self.max_seconds:
            if self.progress is not False and t >= PROGRESS_AFTER and self._last_line is None:
                self._progress(t)           # (a run this long shows its figures at least once, even when the
                #                             check that would have printed them came only at the budget)
            how = ("CPU time; the default budget -- max_seconds= / --max-seconds or max_instructions= / "
                   "--max-instructions sets another" if self.default_budget else "CPU time; max_seconds")
            return self.runaway(f"the run used its budget of {self.max_seconds:g} s of simulation work ({how}) after "
                                f"{retired} warp-instructions and {int(sim.env.now)} cycles")
        if self.progress is not False and t >= PROGRESS_AFTER:
            self._progress(t)
        if self.loops.due(t):
            err = self.loops.sample(t)
            if err is not None:
                return err
        if retired >= self._next_sample:
            return self._livelock_sample()
        return None

    # ------------------------------------------------------------------------------------------ budget
    def runaway(self, what: str) -> RunawayError:
        """The budget's stop: located at the first live warp's instruction, with every live warp's position (the
        debugger's ``where()`` picture: lanes, instruction, what it waits on)."""
        sim = self.sim
        loc = None
        body = sim.program.body
        for w in sim.warps:
            if w.alive.any():
                loc = body[min(int(w.pc[w.alive].min()), len(body) - 1)].loc
                break
        if loc is None and body:
            loc = body[0].loc               # (no warp live at this instant: the kernel's first instruction)
        lines = warp_picture(sim, limit=8, sync=True)
        # (no claim that the kernel is stuck: a long kernel ends here too; the loop monitor and the livelock
        # detector report what they can prove never ends)
        if any(w.alive.any() for w in sim.warps):
            where = ("no non-terminating loop or livelock was found, so it may just be long; where every warp is:\n  " +
                     "\n  ".join(lines) + "\n")
        else:
            where = "no warp is live at this moment" + ("; " + "; ".join(lines) if lines else "")
        return RunawayError(f"{what}; {where}", loc,
                            expected="raise max_instructions / max_seconds if the kernel really is this long")

    # ------------------------------------------------------------------------------------------ interrupt
    def interrupt_error(self) -> RunInterrupted:
        sim = self.sim
        head = (f"stopped by Ctrl-C at cycle {int(sim.env.now)} after {sim.retired} warp-instructions "
                f"({self.elapsed():.1f} s); where every warp is:")
        return RunInterrupted(head + "\n  " + "\n  ".join(warp_picture(sim)) + "\n")

    def install_sigint(self):
        """Route Ctrl-C to this watch while the run goes on; returns what :meth:`restore_sigint` needs."""
        if threading.current_thread() is not threading.main_thread():
            return None
        try:
            before = signal.getsignal(signal.SIGINT)
        except (ValueError, OSError):
            return None
        if before is not signal.default_int_handler:
            return None                     # someone else (a debugger, a test harness) handles it

        def handler(signum, frame):
            if self.interrupted:            # a second Ctrl-C: stop at once
                signal.signal(signal.SIGINT, before)
                raise KeyboardInterrupt
            self.interrupted = True
            self.next_check = 0             # the next retired instruction checks

        try:
            signal.signal(signal.SIGINT, handler)
        except (ValueError, OSError):
            return None
        return before

    @staticmethod
    def restore_sigint(before) -> None:
        if before is not None:
            try:
                signal.signal(signal.SIGINT, before)
            except (ValueError, OSError):
                pass

    # ------------------------------------------------------------------------------------------ progress
    def _out(self):
        if self.progress is False:
            return None
        if self.progress is None:           # auto: a terminal only (logs and captured output stay as they were)
            try:
                return sys.stderr if sys.stderr.isatty() else None
            except (AttributeError, ValueError):
                return None
        return sys.stderr if self.progress is True else self.progress

    def _progress(self, t: float) -> None:
        out = self._out()
        if out is None:
            return
        try:
            tty = out.isatty()
        except (AttributeError, ValueError):
            tty = False
        every = PROGRESS_EVERY_TTY if tty else PROGRESS_EVERY
        if self._last_line is not None and t - self._last_line < every:
            return
        self._last_line = t
        sim = self.sim
        rate = sim.retired / max(t, 1e-9)
        done = sum(1 for c in sim.ctas if c.exited) + sim.retention.ctas
        total = sim.grid[0] * sim.grid[1] * sim.grid[2]
        budget = (f"budget {self.max_seconds:g} s" if self.max_seconds is not None else
                  f"budget {self.max_instructions:,} instructions")
        line = (f"[tcsim] {t:6.1f} s of work: {sim.retired:,} warp-instructions retired, {int(sim.env.now):,} cycles, "
                f"{rate:,.0f} warp-inst/s, {done:,}/{total:,} CTAs done ({budget}; Ctrl-C stops with every "
                f"warp's position)")
        try:
            if tty:
                out.write("\r\x1b[K" + line)
                self._line_open = True
            else:
                out.write(line + "\n")
            out.flush()
        except (OSError, ValueError):
            self.progress = False

    # ------------------------------------------------------------------------------------------ livelock
    def _livelock_sample(self):
        """One livelock sample (see the module docstring); the error when the machine state has repeated."""
        sim = self.sim
        live = sum(1 for w in sim.warps if w.alive.any())
        # a power of two, so that the phases of loops of any length recur within a few samples; growing with the
        # warps and their registers (per LIVELOCK_REGS) so that fingerprinting costs a few instructions' time per
        # warp (a digest reads every register of a warp outside every loop)
        # ... and growing with the run (at least 1/LIVELOCK_SHARE of the instructions retired so far), so that
        # sampling costs a bounded share of a long run: a livelock that begins after N instructions is still seen
        # within about N / LIVELOCK_SHARE more, a few samples of one interval (it doubles only when N does)
        self._next_sample = sim.retired + (1 << max(LIVELOCK_SAMPLE.bit_length() - 1,
                                                    (64 * live * max(1, self._nregs() // LIVELOCK_REGS)).bit_length(),
                                                    (sim.retired // LIVELOCK_SHARE).bit_length()))
        if sim.retired < self._next_sample - sim.retired and self._last_retired is None and not self._seen:
            return None                 # (the first sample: as far from the start as the interval says)
        if not self._quiescent():
            self._reset()
            return None
        self._dense_trigger()
        retired = {id(w): w.retired for w in sim.warps}
        prev = self._last_retired
        self._last_retired = retired
        if prev is None or not all(retired[id(w)] > prev.get(id(w), -1) for w in sim.warps
                                   if (w.alive & ~w.waiting & ~w.parked).any()):
            self._seen.clear()
            self._candidates.clear()
            self._brent, self._count = None, 0
        projected: list = []
        wkey = self._warp_fingerprint(projected=projected)

        def full_key():
            # (no warp's registers projected: the full digest is of the same bytes; only a candidate needs it)
            return self._warp_fingerprint(project=False) if projected else wkey
        now = sim.env.now
        # (Brent's cycle finding: the state at every power-of-two sample is kept as a checkpoint beyond the window of
        # LIVELOCK_STATES states, so that a cycle of any length in sample space comes round to it)
        self._count += 1
        b = self._brent
        if b is not None and b[0] == wkey and wkey not in self._seen:
            self._seen[wkey] = b[1]
        if self._count & (self._count - 1) == 0:
            self._brent = (wkey, now)
        if wkey in self._seen:                  # the warps are where they were: the memories too?
            mkey = self._memory_fingerprint()
            c = self._candidates.get(wkey)
            if c is not None and c[0] == mkey and now - c[1] >= LIVELOCK_MIN_CYCLES:
                if c[2] != full_key():
                    # only registers that cannot change what the loops do differ (an attempt counter): the loop
                    # monitor's account of the first stuck loop is the more precise report, when it has one
                    err = self.loops.explain_stuck(self.elapsed())
                    if err is not None:
                        return err
                return self._livelock_error(self._seen[wkey])
            if c is None or c[0] != mkey:
                self._candidates[wkey] = (mkey, now, full_key())
        else:
            if len(self._seen) >= LIVELOCK_STATES:
                keep = self._brent[0] if self._brent is not None else None
                cand = self._candidates.get(keep)
                self._seen.clear()
                self._candidates.clear()
                if cand is not None:
                    self._candidates[keep] = cand
            self._seen[wkey] = now
        return None

    def _nregs(self) -> int:
        """Registers of a warp (of its kernel's register file)."""
        n = getattr(self, "_nregs_cache", None)
        if n is None:
            ws = self.sim.warps
            n = self._nregs_cache = len(ws[0].regs) if ws else 0
        return n

    def _reset(self) -> None:
        self._seen.clear()
        self._candidates.clear()
        self._brent, self._count = None, 0
        self._last_retired = None
        self._last_mkey = None
        self._dense = None

    # ------------------------------------------------------------------------------------------ dense window
    def _dense_trigger(self) -> None:
        """At a quiet livelock sample: open the dense window when the memories did not change since the previous
        quiet sample and every live warp retired instructions in between (the warps may be cycling through states
        whose period the sparse samples, a power of two instructions apart, cannot see); close it when memory
        changed; not again on the memory state at which a window gave up (:data:`DENSE_ARRIVALS`)."""
        sim = self.sim
        mkey = self._memory_fingerprint()
        same = mkey == self._last_mkey
        self._last_mkey = mkey
        if not same:
            self._dense = None
            return
        if self._dense is not None or mkey == self._dense_spent:
            return
        live = [w for w in sim.warps if (w.alive & ~w.waiting & ~w.parked).any()]
        if not live:
            return
        w = live[0]
        lane = int(np.flatnonzero(w.alive)[0])
        # (the head of the innermost loop the first live warp is in: it passes there once per iteration)
        head = self.loops.loop_map().loop_head(int(w.pc[lane]))
        if head is None:
            return
        self._dense = [w, head, w.retired, 0, 1, None, lane]
        self._dense_full = self.next_check

    def _dense_step(self, d):
        """One instruction of the dense window: when its warp arrives at the loop head again, Brent's cycle finding
        on the machine's states at those arrivals -- a checkpoint at arrival 1, 2, 4, 8 ..., every arrival in
        between compared with it (the warps' PCs first, then the fingerprints the sparse samples take) -- so a
        cycle of L arrivals that began after M is found within about 2 max(M, L) + L arrivals, whatever its length
        in instructions; the error when the whole machine repeated with nothing in flight."""
        w, head, last, n, nxt, ck, lane = d
        r = w.retired
        if r == last:
            return None
        d[2] = r
        if not w.alive[lane] or int(w.pc[lane]) != head:
            if not w.alive[lane]:
                self._dense = None
            return None
        n += 1
        d[3] = n
        sim = self.sim
        if n > DENSE_ARRIVALS:              # (a longer cycle is the budget's; reopened once memory changes)
            self._dense = None
            self._dense_spent = self._last_mkey
            return None
        pcs = b"".join(x.pc.tobytes() + x.alive.tobytes() for x in sim.warps)
        if n == nxt:
            d[4] = nxt * 2
            d[5] = None
            if sim.only_warps_pending():
                d[5] = (pcs, self._warp_fingerprint(), self._memory_fingerprint(), sim.env.now)
            return None
        if ck is None or pcs != ck[0]:
            return None
        if self._warp_fingerprint() != ck[1] or not sim.only_warps_pending() or self._memory_fingerprint() != ck[2]:
            return None
        if sim.env.now - ck[3] < LIVELOCK_MIN_CYCLES:
            return None
        return self._livelock_error(ck[3])

    def _quiescent(self) -> bool:
        """No event is pending but the warps' own (no async unit, timer or barrier release in flight)."""
        return self.sim.only_warps_pending()

    def _warp_fingerprint(self, project: bool = True, projected: list | None = None) -> bytes:
        """A digest of the warps' state: PCs, masks, registers (``project``: only those that can still change what
        the warps' loops do, :meth:`_relevant_registers`), call stacks, local memory.  ``projected``: a list that
        gets an entry when some warp's registers were projected (else the digest is the unprojected one)."""
        sim = self.sim
        # (SHA-1 as a fast 160-bit digest -- a few times blake2b's rate where the CPU has SHA instructions -- of
        # states this run produced, not of anything adversarial; a sample digests every warp's registers)
        h = hashlib.sha1(usedforsecurity=False)
        lmap = self.loops.loop_map()
        fast = getattr(sim, "_fast", None)
        pcs_rows = getattr(fast, "pcs", None)
        RowRegs = getattr(fast, "row_regs_type", None)      # noqa: N806 (a class)
        # (registers that are rows of the fast tier's flat arrays are digested after the warps, one gather per
        # register for all the warps that compare the same names: the same information, a few calls per register
        # instead of one per register and warp; the PCs and live lanes of such warps, rows of the fast tier's
        # arrays too, are digested with one gather as well)
        rows_by: dict = {}
        bulk: list = []
        for w in sim.warps:
            regs = w.regs
            if pcs_rows is not None and type(regs) is RowRegs and w.callstack is None and w.local is None and \
                    w.pc.base is pcs_rows and w.alive.base is fast.alive:
                bulk.append(w)
                continue
            for a in (w.pc, w.alive, w.waiting, w.parked, w.carry):
                h.update(a.tobytes())
            h.update(str(len(w.waits)).encode())
            names = self._relevant_registers(w, lmap) if project else None
            if names is not None and projected is not None and not projected:
                projected.append(True)
            if type(regs) is RowRegs and w.callstack is None:
                ent = rows_by.get((id(regs.flat), names))
                if ent is None:
                    ent = rows_by[(id(regs.flat), names)] = (regs.flat, names, [])
                ent[2].append(regs.i)
            else:
                for name in (sorted(w.regs) if names is None else names):
                    if name not in w.regs:
                        continue
                    h.update(name.encode())
                    h.update(w.regs[name].tobytes())
            if w.callstack is not None:
                for act in w.callstack.activations:
                    for name in sorted(act.regs):
                        h.update(act.regs[name].tobytes())
                h.update(w.callstack.sp.tobytes())
            if w.local is not None:
                h.update(memoryview(w.local.data))
        if bulk:
            idx = np.fromiter((w.regs.i for w in bulk), dtype=np.int64, count=len(bulk))
            h.update(b"rows")
            h.update(idx.tobytes())
            pc, al = pcs_rows[idx], fast.alive[idx]
            for a in (pc, al, np.stack([w.waiting for w in bulk]), np.stack([w.parked for w in bulk]),
                      np.stack([w.carry for w in bulk])):
                h.update(a.tobytes())
            h.update(np.fromiter((len(w.waits) for w in bulk), dtype=np.int64, count=len(bulk)).tobytes())
            if project:
                # per warp the set of its live lanes' PCs: one PC for most (read off the rows at once)
                lo = np.where(al, pc, np.iinfo(np.int64).max).min(axis=1)
                one = lo == np.where(al, pc, -1).max(axis=1)
                lo_l, one_l = lo.tolist(), one.tolist()
            for t, w in enumerate(bulk):
                if not project:
                    names = None
                elif one_l[t]:
                    names = self._relevant_for(frozenset((lo_l[t],)), lmap)
                else:
                    names = self._relevant_registers(w, lmap)
                if names is not None and projected is not None and not projected:
                    projected.append(True)
                flat = w.regs.flat
                ent = rows_by.get((id(flat), names))
                if ent is None:
                    ent = rows_by[(id(flat), names)] = (flat, names, [])
                ent[2].append(w.regs.i)
        for flat, names, rows in rows_by.values():
            idx = np.asarray(rows, dtype=np.int64)
            h.update(idx.tobytes())
            lo = int(idx[0]) if len(idx) else 0
            run = len(idx) and int(idx[-1]) == lo + len(idx) - 1 and (len(idx) < 3 or (np.diff(idx) == 1).all())
            for name in (sorted(flat) if names is None else names):
                if name not in flat:
                    continue
                h.update(name.encode())
                # (consecutive rows: their bytes as they lie, no gather)
                h.update(memoryview(flat[name][lo:lo + len(idx)]) if run else flat[name][idx].tobytes())
        return h.digest()

    def _relevant_registers(self, w, lmap):
        """The registers of warp ``w`` that the fingerprint compares: those that can still influence what its live
        lanes do while they stay in the loops they are in (:meth:`tcsim.loop_watch.LoopMap.relevant_at`; a spin
        loop's attempt counter is not among them), or None for all of them (a lane outside every loop, a call)."""
        if w.callstack is not None:
            return None
        return self._relevant_for(frozenset(int(p) for p in np.unique(w.pc[w.alive])), lmap)

    def _relevant_for(self, pcs: frozenset, lmap):
        """:meth:`_relevant_registers` of a warp whose live lanes stand at ``pcs`` (no call stack)."""
        cache = self._relevant_cache
        if pcs in cache:
            return cache[pcs]
        names: set = set()
        for pc in pcs:
            r = lmap.relevant_at(pc)
            if r is None:
                names = None
                break
            names |= r
        out = None if names is None else tuple(sorted(names))
        if len(cache) < 4096:
            cache[pcs] = out
        return out

    def _memory_fingerprint(self) -> bytes:
        sim = self.sim
        h = hashlib.blake2b(digest_size=20)
        for c in sim.ctas:
            _digest_cta(h, c)
        for cl in sim.clusters:
            h.update(repr((cl.barrier_arrived, cl.barrier_expected)).encode())
        for alloc in sim.gmem.allocations():
            h.update(memoryview(alloc.data))
        return h.digest()

    @staticmethod
    def cluster_fingerprint(cluster) -> bytes:
        """A digest of what only the CTAs of ``cluster`` (and their async operations) can change: each CTA's shared
        memory, mbarriers, named barriers and tensor memory, and the cluster barrier (the loop monitor's per-cluster
        verdict, tcsim.loop_watch)."""
        h = hashlib.blake2b(digest_size=20)
        for c in cluster.ctas:
            _digest_cta(h, c)
        h.update(repr((cluster.barrier_arrived, cluster.barrier_expected)).encode())
        return h.digest()

    def _livelock_error(self, since) -> LivelockError:
        sim = self.sim
        body = sim.program.body
        loc = None
        for w in sim.warps:
            run = w.alive & ~w.waiting & ~w.parked
            if run.any():
                loc = body[min(int(w.pc[run].min()), len(body) - 1)].loc
                break
        lmap = self.loops.loop_map()
        loops, counted = [], set()
        for w in sim.warps:
            for pc in sorted(set(int(p) for p in w.pc[w.alive & ~w.waiting & ~w.parked])):
                ll = lmap.loop_lines(pc)
                if ll is not None:
                    txt = f"the loop at lines {ll[0]}-{ll[1]} (head `{ll[2]}` at {ll[2].loc})"
                    if txt not in loops:
                        loops.append(txt)
                if w.callstack is None:
                    counted |= lmap.counted_at(pc) & set(w.regs)
        where = (" in " + ", ".join(loops[:4]) + (" and more" if len(loops) > 4 else "")) if loops else ""
        ignored = (f" (registers the loops only count with and never test, compare or address through -- "
                   f"{', '.join(sorted(counted)[:6])}{', ...' if len(counted) > 6 else ''} -- may differ: they "
                   "cannot change what the loops do)") if counted else ""
        msg = (f"the kernel can make no progress: from cycle {int(since)} to {int(sim.env.now)} every live warp "
               f"kept executing{where} (polling) but the machine state (registers, shared/global/tensor memory, "
               f"barriers) repeated exactly{ignored}, with nothing in flight: it repeats forever; every live warp: " +
               "; ".join(warp_picture(sim)))
        # the polled mbarriers' root causes, as a deadlock gets them (a test_wait loop is a wait that never blocks)
        causes = sim.polled_barrier_causes() if hasattr(sim, "polled_barrier_causes") else []
        if causes:
            msg += " Root cause: " + " | ".join(f"[class {f.cls}] {f.message}" + (f"; missing: {f.missing}"
                                                                                 if f.missing else "")
                                                for f in causes) + "."
        return LivelockError(msg, loc, expected="the value or phase the polling warps wait for to be produced by "
                             "some warp or async operation")

