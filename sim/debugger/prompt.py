"""``tcsim debug LAUNCH.py``: an interactive prompt over :class:`tcsim.session.Session` with gdb / pdb habits.

Commands (``help COMMAND`` for each; unique prefixes and the gdb abbreviations work: ``b``, ``c``, ``s``, ``n``,
``p``, ``rs``, ``rc``, ``bt``, ``q``)::

    break LINE [if EXPR] [warp W] [cta C]    stop after an instruction of LINE retires (EXPR over registers:
    tbreak ...                               `%r5 > 3 and %p1`, true for some executing lane); tbreak: once
    break finding [CLASS]                    stop when the run records a finding (of CLASS)
    delete [ID ...]                          delete breakpoints / watchpoints (all without an ID)
    watch smem ADDR[:LEN] [cta C] [as T]     stop when the bytes change (any writer: a warp, the TMA engine...)
    watch gmem ARG[INDEX]                    an element of an array argument (by parameter name or position)
    watch tmem LANES COLS [cta C] [as T]     TMEM cells, e.g. `watch tmem 0:32 0:8 as f32`
    watch mbarrier NAME|ADDR [cta C]         phase / pending arrivals / tx-count
    step [N] [warp W]   next [warp W]        N warp-instructions (of warp W); next: a call counts as one
    continue                                 to the next breakpoint / watchpoint / finding, or the end
    reverse-step [N] [warp W]                back to before the last retired instruction (of warp W)
    reverse-continue                         back to the last stop -- for a watchpoint, the write that changed it
    where / info warps                       where each warp is, its lanes, what it waits on
    info breakpoints|watchpoints|findings|schedule|position
    print %r5 [warp W] [lane L] [as f16x2]   a register's lanes (as a type)
    x/16xw smem 0x100 [cta C]                memory: x/N{x,d,u,f}{b,h,w,g} smem ADDR | gmem ARG[INDEX] | gmem ADDR
    tmem LANES COLS [as f32] [cta C]         a TMEM tile as a table
    mbarriers [cta C]    async               the mbarriers; the async operations in flight and when they complete
    schedule warp W first|last   schedule default    force an interleaving (restarts the run, same seed)
    delay tma|tensor_pipe|cp.async|tcgen05.st [late|early|default]
    run                                      restart (same seed and schedule)
    list [LINE]                              PTX source around LINE (default: the last retired line)
    goto POS                                 to a position (events since the start), forward or back
    quit

Bad input gets a one-line message, never a traceback; a kernel error (a fault, a deadlock) is shown with its
location and the session stays usable (``reverse-step`` goes back before it).
"""
from __future__ import annotations

import cmd
import os
import re
import sys

import numpy as np

from tcsim.isa.errors import TcsimError
from tcsim.session import DebugError, Session

PROMPT = "(tcsim) "
ALIASES = {"b": "break", "c": "continue", "cont": "continue", "s": "step", "si": "step", "stepi": "step",
           "n": "next", "p": "print", "rs": "reverse_step", "reverse-step": "reverse_step",
           "rc": "reverse_continue", "reverse-continue": "reverse_continue", "bt": "where", "backtrace": "where",
           "q": "quit", "exit": "quit", "d": "delete", "i": "info", "r": "run", "l": "list", "w": "watch",
           "rsi": "reverse_step", "reverse-stepi": "reverse_step"}
WATCH_KINDS = ("smem", "gmem", "tmem", "mbarrier")
INFO_TOPICS = ("warps", "breakpoints", "watchpoints", "findings", "schedule", "position", "checkpoints")
TYPES = ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64", "b32", "b64", "f16", "bf16", "f32", "f64", "f16x2",
         "bf16x2", "e4m3", "e5m2", "e4m3x2", "e5m2x2")


class Usage(Exception):
    """A command used wrongly: the message says how to use it."""


def _int(s: str, what: str) -> int:
    try:
        return int(s, 0)
    except (TypeError, ValueError):
        raise Usage(f"{what} {s!r} is not a number") from None


def _take(tokens: list, word: str, what: str):
    """Remove ``word N`` from ``tokens``; the number or None."""
    if word in tokens:
        i = tokens.index(word)
        if i + 1 >= len(tokens):
            raise Usage(f"`{word}` needs a {what}")
        v = _int(tokens[i + 1], what)
        del tokens[i:i + 2]
        return v
    return None


def _take_as(tokens: list):
    if "as" in tokens:
        i = tokens.index("as")
        if i + 1 >= len(tokens):
            raise Usage("`as` needs a type, e.g. `as f32`")
        t = tokens[i + 1].lstrip(".")
        del tokens[i:i + 2]
        return t
    return None


def _span(s: str, what: str) -> tuple:
    """``A:B`` (half-open) or ``A`` -> (lo, hi)."""
    if ":" in s:
        a, b = s.split(":", 1)
        return _int(a, what), _int(b, what)
    v = _int(s, what)
    return v, v + 1


class _RawLines:
    """stdin read a byte at a time when it is not a terminal: nothing is read ahead of the command being run (a
    forked checkpoint that takes over the session reads on exactly where this one stopped)."""

    def __init__(self, fd: int = 0):
        self.fd = fd

    def readline(self) -> str:
        buf = bytearray()
        while True:
            try:
                b = os.read(self.fd, 1)
            except OSError:
                b = b""
            if not b:
                break
            buf += b
            if b == b"\n":
                break
        return buf.decode("utf-8", "replace")


class DebugShell(cmd.Cmd):
    """The ``tcsim debug`` prompt over a :class:`tcsim.session.Session`."""

    prompt = PROMPT
    doc_header = "Commands (help COMMAND):"

    def __init__(self, session: Session, *, stdin=None, stdout=None, echo: bool | None = None, check=None,
                 history: str | None = None):
        interactive = stdin is None and sys.stdin.isatty()
        super().__init__(stdin=stdin if stdin is not None else (sys.stdin if interactive else _RawLines()),
                         stdout=stdout)
        self.use_rawinput = interactive
        self.s = session
        self.echo = (not interactive) if echo is None else echo
        self.check = check
        self.history_path = history
        self.exit_status = 0
        self.intro = None
        self._readline = None
        self.checkpoints = None
        #: say how long each replay took (``set verbose on``)
        self.verbose_replay = False
        if interactive:
            self._setup_readline()

    # ------------------------------------------------------------------------------------------ plumbing
    def _setup_readline(self) -> None:
        try:
            import readline
        except ImportError:          # (no readline on this platform: no history, no completion)
            return
        self._readline = readline
        readline.set_completer_delims(" \t\n")
        if self.history_path:
            try:
                readline.read_history_file(self.history_path)
            except OSError:
                pass
            readline.set_history_length(1000)

    def _save_history(self) -> None:
        if self._readline is not None and self.history_path:
            try:
                self._readline.write_history_file(self.history_path)
            except OSError:
                pass

    def out(self, text="") -> None:
        self.stdout.write(f"{text}\n")
        self.stdout.flush()

    def precmd(self, line: str) -> str:
        if self.echo and line and line != "EOF":
            self.stdout.write(line if line.endswith("\n") else line + "\n")
        line = line.strip()
        if not line or line.startswith("#"):
            return "" if not line.startswith("#") else "#"
        if line.startswith("x/") or line == "x":
            return "x " + line[1:]
        word, _, rest = line.partition(" ")
        if word in ALIASES:
            return f"{ALIASES[word]} {rest}".strip()
        if word.startswith("reverse-"):
            return word.replace("-", "_") + (" " + rest if rest else "")
        return line

    def emptyline(self) -> bool:
        return False                # (gdb repeats the last command; a debugger of async kernels should not guess)

    def default(self, line: str) -> bool:
        if line == "#":
            return False
        if line == "EOF":
            self.out("")
            return self.do_quit("")
        word = line.split()[0]
        names = [n[3:] for n in self.get_names() if n.startswith("do_")]
        hits = sorted(n for n in names if n.startswith(word))
        if len(hits) == 1:
            return self.onecmd(hits[0] + line[len(word):])
        self.out(f"unknown command {word!r}" + (f" (did you mean: {', '.join(hits)}?)" if hits else
                                                "; `help` lists the commands"))
        return False

    def onecmd(self, line: str) -> bool:
        try:
            return super().onecmd(line)
        except Usage as e:
            self.out(f"usage: {e}")
        except (DebugError, TcsimError) as e:
            self.out(str(e))
        except KeyboardInterrupt:
            if self.s._dirty:
                self.out(f"interrupted; back to position {self.s.pos} (replaying)")
                self.s.goto(self.s.pos)
            else:
                self.out("interrupted")
        return False

    def _stopped(self, st) -> None:
        self.out(str(st))
        if st is not None and st.reason == "exited" and self.check is not None:
            try:
                ok, msg = self.check(self.s._result, self.s.launch)
                self.out(f"check: {'PASS' if ok else 'FAIL'}: {msg}")
            except Exception as e:  # noqa: BLE001 -- the user's check function: reported, the prompt stays
                self.out(f"check raised {type(e).__name__}: {e}")

    def _run(self, fn, *a, **k):
        """Run a stepping call; a kernel error is shown (located) and the session stays usable."""
        try:
            return fn(*a, **k)
        except DebugError:
            raise
        except TcsimError as e:
            self.out(f"the kernel stopped with an error at position {self.s.pos}:\n{e}")
            self.out("(reverse-step goes back before it; `run` restarts)")
            return None

    # ------------------------------------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        """What a debugger forked from a checkpoint needs to take over (tcsim.debugger.checkpoints)."""
        import copy
        bps = {}
        for k, b in self.s.breakpoints.items():
            b2 = copy.copy(b)
            if hasattr(b2, "_code"):
                b2._code = None
            bps[k] = b2
        hist = []
        if self._readline is not None:
            hist = [self._readline.get_history_item(i) for i in range(1, self._readline.get_current_history_length()
                                                                          + 1)]
        return {"breakpoints": bps, "watchpoints": dict(self.s.watchpoints), "ids": self.s._ids,
                "history": hist, "echo": self.echo, "verbose": self.verbose_replay}

    def resume(self, payload: dict) -> None:
        """Take over in a debugger forked from a checkpoint: the state, then the replay to the target."""
        st = payload["state"]
        s = self.s
        for b in st["breakpoints"].values():
            if getattr(b, "cond", None):
                from tcsim.session import _REG, _c_ops
                expr = b.cond
                for i, nme in enumerate(_REG.findall(b.cond)):
                    expr = expr.replace(nme, f"_r{i}", 1)
                b._code = compile(_c_ops(expr), f"<breakpoint {b.id} condition>", "eval")
        s.breakpoints = st["breakpoints"]
        s.watchpoints = st["watchpoints"]
        s._ids = st["ids"]
        self.echo = st["echo"]
        self.verbose_replay = st["verbose"]
        if self._readline is not None:
            self._readline.clear_history()
            for h in st["history"]:
                if h:
                    self._readline.add_history(h)
        st = s._travel(payload["target"], payload["then"])
        k = max(self.checkpoints.chain) if self.checkpoints is not None and self.checkpoints.chain else 0
        self.out(str(st))
        self._replayed(f"from the checkpoint at position {k}")

    # ------------------------------------------------------------------------------------------ breakpoints
    def _parse_break(self, arg: str, temporary: bool) -> None:
        text = arg.strip()
        if not text:
            raise Usage("break LINE [if EXPR] [warp W] [cta C]  |  break finding [CLASS]")
        if text.split()[0] == "finding":
            rest = text.split()[1:]
            if len(rest) > 1:
                raise Usage("break finding [CLASS]")
            cls = _int(rest[0], "finding class") if rest else None
            fb = self.s.break_finding(cls)
            self.out(f"Breakpoint {fb.id}: {fb.describe().split(' -- ')[0]}")
            return
        warp = cta = None
        while True:
            m = re.search(r"\s+(warp|cta)\s+(\S+)\s*$", text)
            if not m:
                break
            v = _int(m.group(2), m.group(1))
            if m.group(1) == "warp":
                warp = v
            else:
                cta = v
            text = text[:m.start()]
        cond = None
        m = re.match(r"(\S+)\s+if\s+(.+)$", text)
        if m:
            text, cond = m.group(1), m.group(2).strip()
        elif len(text.split()) != 1:
            raise Usage("break LINE [if EXPR] [warp W] [cta C]")
        line = _int(text.split()[0].split(":")[-1], "line")
        bp = self.s.break_at(line, cond=cond, warp=warp, cta=cta, temporary=temporary)
        self.out(f"Breakpoint {bp.id}: {bp.describe().split(' -- ')[0]} (`{self.s._text_of_line(line)}`)")

    def do_break(self, arg):
        """break LINE [if EXPR] [warp W] [cta C] | break finding [CLASS]
        Stop after an instruction of PTX LINE retires (in warp W / CTA C; when EXPR -- a Python expression over
        registers, `%r5 == 3 and %p1`, `&&`/`||` accepted -- holds for some executing lane).  `break finding`
        stops when the race detector or a protocol check records a finding (of CLASS: `info findings`)."""
        self._parse_break(arg, False)

    def do_tbreak(self, arg):
        """tbreak LINE [if EXPR] [warp W] [cta C]: a breakpoint deleted when it first stops."""
        self._parse_break(arg, True)

    def do_delete(self, arg):
        """delete [ID ...]: delete breakpoints and watchpoints (all of them without an ID)."""
        ids = arg.split()
        if not ids:
            self.s.delete()
            self.out("deleted every breakpoint and watchpoint")
            return
        for x in ids:
            self.s.delete(_int(x, "breakpoint number"))
        self.out(f"deleted {', '.join(ids)}")

    def do_watch(self, arg):
        """watch smem ADDR[:LEN] [cta C] [as TYPE] | watch gmem ARG[INDEX] | watch tmem LANES COLS [cta C] [as TYPE]
        | watch mbarrier NAME|ADDR [cta C]
        Stop when the watched value changes, showing the writer (line, warp and lanes; or the async unit and the
        instruction that issued its op) and the old and new value.  ADDR is a shared-window offset as PTX
        addresses it (`info` of a register holding it, or `mbarriers`); LEN defaults to 4 bytes."""
        t = arg.split()
        if not t or t[0] not in WATCH_KINDS:
            raise Usage("watch smem ADDR[:LEN] | watch gmem ARG[INDEX] | watch tmem LANES COLS | "
                        "watch mbarrier NAME|ADDR")
        kind, rest = t[0], t[1:]
        cta = _take(rest, "cta", "CTA index")
        cta = 0 if cta is None else cta
        ty = _take_as(rest)
        if kind == "smem":
            if len(rest) != 1:
                raise Usage("watch smem ADDR[:LEN] [cta C] [as TYPE]")
            a, _, n = rest[0].partition(":")
            wp = self.s.watch_smem(self._addr(a), _int(n, "length") if n else 4, cta, dtype=ty)
        elif kind == "gmem":
            m = re.fullmatch(r"([\w$]+)(?:\[(\w+)(?::(\w+))?\])?", "".join(rest))
            if not m:
                raise Usage("watch gmem ARG[INDEX]  (ARG: a parameter name or argument number)")
            lo = _int(m.group(2), "index") if m.group(2) else 0
            hi = _int(m.group(3), "index") if m.group(3) else lo + 1
            wp = self.s.watch_gmem(m.group(1), lo, max(1, hi - lo))
        elif kind == "tmem":
            if len(rest) != 2:
                raise Usage("watch tmem LANES COLS [cta C]   e.g. watch tmem 0:32 0:8")
            wp = self.s.watch_tmem(_span(rest[0], "lanes"), _span(rest[1], "columns"), cta, dtype=ty)
        else:
            if len(rest) != 1:
                raise Usage("watch mbarrier NAME|ADDR [cta C]")
            wp = self.s.watch_mbarrier(rest[0], cta)
        self.out(f"Watchpoint {wp.id}: {wp.label} = {self.s.format_value(wp, wp.last)}")

    def _addr(self, text: str) -> int:
        try:
            return int(text, 0)
        except ValueError:
            return self.s.mbarrier_offset(text)      # a shared symbol (+ offset)

    # ------------------------------------------------------------------------------------------ execution
    def _warp_count(self, arg: str, usage: str):
        t = arg.split()
        warp = _take(t, "warp", "warp index")
        cta = _take(t, "cta", "CTA index")
        if len(t) > 1:
            raise Usage(usage)
        n = _int(t[0], "count") if t else 1
        if n < 1:
            raise Usage(f"{usage} (N >= 1)")
        return n, warp, 0 if cta is None else cta

    def do_step(self, arg):
        """step [N] [warp W] [cta C]: execute N warp-instructions (N of warp W; the other warps run as the
        schedule has them).  Stops early at a breakpoint, watchpoint or finding."""
        n, warp, cta = self._warp_count(arg, "step [N] [warp W] [cta C]")
        r = self._run(self.s.step, n, warp=warp, cta=cta)
        if r is not None or self.s.stop is not None:
            self._stopped(self.s.stop)

    def do_next(self, arg):
        """next [warp W]: one instruction of warp W (default: the warp that retired last); a call is one step."""
        _, warp, cta = self._warp_count(arg, "next [warp W] [cta C]")
        self._run(self.s.next, warp=warp, cta=cta)
        self._stopped(self.s.stop)

    def do_continue(self, arg):
        """continue: run to the next breakpoint, watchpoint or finding, or to the end."""
        if arg.strip():
            raise Usage("continue")
        st = self._run(self.s.cont)
        if st is not None:
            self._stopped(st)

    def do_reverse_step(self, arg):
        """reverse-step [N] [warp W]: go back to just before the last (N-th last) retired warp-instruction (of
        warp W), by deterministic replay."""
        n, warp, cta = self._warp_count(arg, "reverse-step [N] [warp W] [cta C]")
        st = self.s.reverse_step(n, warp=warp, cta=cta)
        self.out(str(st))
        self._replayed("from the launch")

    def _replayed(self, whence: str) -> None:
        dt, n = self.s.last_replay
        if self.verbose_replay:
            self.out(f"(replayed {n} events {whence} in {dt:.3f} s)")

    def do_reverse_continue(self, arg):
        """reverse-continue: go back to the last breakpoint / watchpoint / finding stop before here -- for a
        watchpoint, right after the write that last changed the watched value (the writer is shown)."""
        if arg.strip():
            raise Usage("reverse-continue")
        st = self.s.reverse_cont()
        self.out(str(st))
        self._replayed("from the launch")

    def do_goto(self, arg):
        """goto POS: to position POS (events since the start), forward or back (deterministic replay)."""
        t = arg.split()
        if len(t) != 1:
            raise Usage("goto POS")
        st = self._run(self.s.goto, _int(t[0], "position"))
        if st is not None:
            self.out(str(st))

    def do_run(self, arg):
        """run: restart the kernel from the launch (same seed and schedule; breakpoints and watchpoints stay)."""
        if arg.strip():
            raise Usage("run   (restarts; the arguments come from the launch file)")
        self.out(str(self.s.restart()))

    def do_schedule(self, arg):
        """schedule warp W first|last [cta C] | schedule default
        Force an interleaving: warp W issues before (after) the others whenever both could, and the others (it)
        wait extra cycles per instruction.  A schedule decides the whole run, so the run restarts."""
        t = arg.split()
        if t == ["default"]:
            self.out(str(self.s.default_schedule()))
            return
        cta = _take(t, "cta", "CTA index")
        if len(t) != 3 or t[0] != "warp" or t[2] not in ("first", "last"):
            raise Usage("schedule warp W first|last [cta C]  |  schedule default")
        w = _int(t[1], "warp")
        fn = self.s.schedule_first if t[2] == "first" else self.s.schedule_last
        self.out(str(fn(w, 0 if cta is None else cta)))

    def do_delay(self, arg):
        """delay UNIT [late|early|default]: complete every op of an async unit (tma, tensor_pipe, cp.async,
        tcgen05.st) at the latest (earliest) latency the config allows; restarts the run."""
        t = arg.split()
        if not 1 <= len(t) <= 2:
            raise Usage("delay tma|tensor_pipe|cp.async|tcgen05.st [late|early|default]")
        self.out(str(self.s.delay(t[0], t[1] if len(t) > 1 else "late")))

    # ------------------------------------------------------------------------------------------ inspection
    def do_where(self, arg):
        """where: each warp's position (PC line and instruction per group of lanes) and what it waits on."""
        self.out(str(self.s.warps_table()))

    def do_info(self, arg):
        """info warps|breakpoints|watchpoints|findings|schedule|position"""
        t = arg.split()
        topic = next((x for x in INFO_TOPICS if t and x.startswith(t[0])), None)
        if len(t) != 1 or topic is None:
            raise Usage("info " + "|".join(INFO_TOPICS))
        s = self.s
        if topic == "warps":
            self.out(str(s.warps_table()))
        elif topic == "breakpoints":
            if not s.breakpoints:
                self.out("no breakpoints")
            for k, b in sorted(s.breakpoints.items()):
                self.out(f"{k}: {b.describe()}")
        elif topic == "watchpoints":
            if not s.watchpoints:
                self.out("no watchpoints")
            for k, w in sorted(s.watchpoints.items()):
                self.out(f"{k}: {w.describe()}; now {s.format_value(w, s._wp_value(w))}")
        elif topic == "findings":
            fs = s.findings()
            if not fs:
                self.out("no findings so far")
            for f in fs:
                self.out(f.format())
        elif topic == "schedule":
            sch = s.schedule
            self.out(f"schedule: {sch.what if sch is not None else 'default'}; seed {s.seed}; "
                     f"timing {'on' if s.sim.arch_config.timed else 'off (1 cycle per warp-instruction)'}")
        elif topic == "checkpoints":
            cp = self.checkpoints
            if cp is None or not cp.enabled:
                self.out("no checkpoints: going back replays from the launch")
            else:
                self.out(f"checkpoints at positions {', '.join(map(str, sorted(cp.chain)))} (every "
                         f"{cp.every} events, more sparsely as they add up)")
        else:
            self.out(f"position {s.pos}, cycle {s.sim.env.now:g}, {s.sim.retired} warp-instructions retired"
                     + (f"; last: {s._last}" if s._last else ""))

    def do_print(self, arg):
        """print %REG [warp W] [cta C] [lane L] [as TYPE]: a register's value in each lane (or one lane), raw or
        viewed as a PTX type (f32, f16x2, bf16x2, s32, e4m3x2...).  Without `warp`: the warp that retired last."""
        t = arg.split()
        warp = _take(t, "warp", "warp index")
        cta = _take(t, "cta", "CTA index")
        lane = _take(t, "lane", "lane")
        ty = _take_as(t)
        if len(t) != 1:
            raise Usage("print %REG [warp W] [cta C] [lane L] [as TYPE]")
        if warp is None:
            warp = self.s._last.warp if self.s._last is not None else 0
            if cta is None and self.s._last is not None:
                cta = self.s._cta_index(self.s._last.cta)
        cta = 0 if cta is None else cta
        v = self.s.reg(t[0], warp=warp, cta=cta, ptype=ty)
        name = t[0] if t[0].startswith("%") else "%" + t[0]
        w = self.s.warp(warp, cta)
        if lane is not None:
            from tcsim.session import _lane
            self.out(f"{name} ({w.label} lane {lane}) = {_fmt(v[_lane(lane)])}")
            return
        self.out(f"{name} ({w.label}" + (f" as {ty}" if ty else "") + "):")
        vals = [_fmt(v[i]) for i in range(32)]
        width = max(len(x) for x in vals)
        per = max(1, 100 // (width + 10))
        for i in range(0, 32, per):
            self.out("  " + "  ".join(f"[{j:2}] {vals[j]:>{width}}" for j in range(i, min(32, i + per))))

    def do_x(self, arg):
        """x/NFU smem ADDR [cta C] | x/NFU gmem ARG[INDEX] | x/NFU gmem ADDR
        Examine memory: N units of size U (b 1, h 2, w 4, g 8 bytes) in format F (x hex, d signed, u unsigned,
        f float: f16 / f32 / f64 by U).  e.g. `x/16xw smem 0x480`, `x/4fw gmem out[8]`."""
        m = re.match(r"\s*/?(\d*)([xduf]?)([bhwg]?)\s+(\S+)\s+(.+)$", arg)
        if not m:
            raise Usage("x/NFU smem ADDR [cta C] | x/NFU gmem ARG[INDEX] | x/NFU gmem ADDR")
        n = int(m.group(1) or 1)
        fmt = m.group(2) or "x"
        size = {"b": 1, "h": 2, "w": 4, "g": 8}[m.group(3) or "w"]
        space, rest = m.group(4), m.group(5).split()
        cta = _take(rest, "cta", "CTA index")
        cta = 0 if cta is None else cta
        if space == "smem":
            if len(rest) != 1:
                raise Usage("x/NFU smem ADDR [cta C]")
            addr = self._addr(rest[0])
            raw = self.s._smem_bytes(self.s._cta_of(cta), addr, n * size)
        elif space == "gmem":
            mm = re.fullmatch(r"([\w$]+)\[(\w+)\]", "".join(rest))
            if mm:
                i, name, orig, base = self.s._array_arg(mm.group(1))
                idx = _int(mm.group(2), "index")
                if not 0 <= idx < orig.size:
                    raise DebugError(f"{name}[{idx}] is out of range: {name} has {orig.size} elements")
                addr = base + idx * orig.dtype.itemsize
            elif len(rest) == 1 and re.fullmatch(r"[A-Za-z_$][\w$]*", rest[0]):
                i, name, orig, addr = self.s._array_arg(rest[0])
            elif len(rest) == 1:
                addr = _int(rest[0], "address")
            else:
                raise Usage("x/NFU gmem ARG[INDEX] | x/NFU gmem ADDR")
            raw = self.s.gmem(addr, n * size)
        else:
            raise Usage("x/NFU smem ADDR | x/NFU gmem ARG[INDEX]   (TMEM: `tmem LANES COLS`)")
        if fmt == "f":
            if size == 1:
                raise Usage("x/f needs units of 2, 4 or 8 bytes (h, w, g)")
            vals = raw.view({2: np.float16, 4: np.float32, 8: np.float64}[size])
            cells = [f"{float(v):.6g}" for v in vals]
        elif fmt == "d":
            cells = [str(int(v)) for v in raw.view({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[size])]
        else:
            u = raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size])
            cells = [f"0x{int(v):0{2 * size}x}" if fmt == "x" else str(int(v)) for v in u]
        per = max(1, 16 // size if fmt == "x" else 8)
        for i in range(0, len(cells), per):
            self.out(f"0x{addr + i * size:x}:  " + "  ".join(cells[i:i + per]))

    def do_tmem(self, arg):
        """tmem LANES COLS [as TYPE] [cta C]: a TMEM tile as a table, e.g. `tmem 0:8 0:4 as f32` (TYPE: u32, s32,
        f32, f16x2, bf16x2)."""
        t = arg.split()
        cta = _take(t, "cta", "CTA index")
        ty = _take_as(t) or "f32"
        if len(t) != 2:
            raise Usage("tmem LANES COLS [as TYPE] [cta C]   e.g. tmem 0:8 0:4 as f32")
        self.out(str(self.s.tmem_table(_span(t[0], "lanes"), _span(t[1], "columns"), ty, 0 if cta is None else cta)))

    def do_mbarriers(self, arg):
        """mbarriers [cta C]: every mbarrier: phase, parity, pending arrivals, tx-count, who waits."""
        t = arg.split()
        cta = _take(t, "cta", "CTA index")
        if t:
            raise Usage("mbarriers [cta C]")
        self.out(str(self.s.mbarrier_table(0 if cta is None else cta)))

    def do_async(self, arg):
        """async: the async operations in flight (TMA, tensor pipe...), who issued them and when they
        complete."""
        self.out(str(self.s.async_table()))

    def do_list(self, arg):
        """list [LINE]: the PTX source around LINE (default: the line that retired last)."""
        t = arg.split()
        if len(t) > 1:
            raise Usage("list [LINE]")
        line = _int(t[0], "line") if t else (self.s._last.line if self.s._last else 1)
        lines = self.s._ptx_lines()
        if not lines:
            self.out("(no PTX text: the launch holds a parsed module)")
            return
        bps = {b.line for b in self.s.breakpoints.values() if hasattr(b, "line")}
        for i in range(max(1, line - 5), min(len(lines), line + 5) + 1):
            mark = ("B" if i in bps else " ") + (">" if i == line else " ")
            self.out(f"{mark}{i:5}  {lines[i - 1]}")

    def do_set(self, arg):
        """set verbose on|off: report how many events each reverse command replayed and how long it took."""
        t = arg.split()
        if len(t) != 2 or t[0] != "verbose" or t[1] not in ("on", "off"):
            raise Usage("set verbose on|off")
        self.verbose_replay = t[1] == "on"

    def do_quit(self, arg):
        """quit: leave the debugger."""
        self._save_history()
        if self.checkpoints is not None:
            self.checkpoints.quit(self.exit_status)
        return True

    # ------------------------------------------------------------------------------------------ completion
    def completenames(self, text, *ignored):
        names = super().completenames(text, *ignored)
        extra = [a for a in ("reverse-step", "reverse-continue") if a.startswith(text)]
        return sorted(set(n.replace("_", "-") if n.startswith("reverse_") else n for n in names) | set(extra))

    def _regs_matching(self, text):
        try:
            return [r for r in self.s.warp(0).regs if r.startswith(text)]
        except DebugError:
            return []

    def complete_watch(self, text, line, begidx, endidx):
        t = line.split()
        if len(t) == 1 or (len(t) == 2 and not line.endswith(" ")):
            return [k for k in WATCH_KINDS if k.startswith(text)]
        if t[1] == "mbarrier":
            return [n for n in self.s.sim.program.shared_symbols if n.startswith(text)]
        if t[1] == "gmem":
            return [p.name for p in self.s.sim.program.kernel.params if p.name.startswith(text)]
        return []

    def complete_info(self, text, *a):
        return [k for k in INFO_TOPICS if k.startswith(text)]

    def complete_print(self, text, line, *a):
        if text.startswith("%") or not line.split()[1:]:
            return self._regs_matching(text)
        return [k for k in ("warp", "lane", "cta", "as") + TYPES if k.startswith(text)]

    def complete_break(self, text, *a):
        return [k for k in ("finding", "if", "warp", "cta") if k.startswith(text)]

    complete_tbreak = complete_break

    def complete_delay(self, text, *a):
        return [k for k in ("tma", "tensor_pipe", "cp.async", "tcgen05.st", "late", "early", "default")
                if k.startswith(text)]

    def complete_schedule(self, text, *a):
        return [k for k in ("warp", "first", "last", "default") if k.startswith(text)]


def _fmt(x) -> str:
    if isinstance(x, np.ndarray):
        return "(" + ", ".join(_fmt(y) for y in x) + ")"
    if isinstance(x, (np.floating, float)) or type(x).__name__ in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return f"{float(x):.6g}"
    if isinstance(x, (np.bool_, bool)):
        return "1" if x else "0"
    if isinstance(x, np.void):
        from tcsim.ptxtypes import b128_int
        return f"0x{b128_int(x):032x}"
    v = int(x)
    return f"{v} (0x{v & 0xFFFFFFFFFFFFFFFF:x})" if v > 9 or v < 0 else str(v)


def history_file() -> str | None:
    """Where the prompt keeps its history: $TCSIM_DEBUG_HISTORY, else ~/.tcsim_debug_history ('' turns it off)."""
    p = os.environ.get("TCSIM_DEBUG_HISTORY")
    if p is not None:
        return p or None
    home = os.path.expanduser("~")
    return os.path.join(home, ".tcsim_debug_history") if home and home != "~" else None


def debug_main(args, mod, launch) -> int:
    """``tcsim debug`` (the subcommand's body): ``mod`` the launch file's module, ``launch`` its Launch."""
    if args.command is not None and not os.path.isfile(args.command):
        print(f"tcsim debug: command file {args.command} not found", file=sys.stderr)
        return 2
    s = Session(launch, seed=args.seed, timing=args.timing, max_instructions=args.max_instructions)
    interactive = sys.stdin.isatty() and args.command is None
    stdin = _RawLines(os.open(args.command, os.O_RDONLY)) if args.command else None
    shell = DebugShell(s, stdin=stdin, check=getattr(mod, "check", None),
                       history=history_file() if interactive else None)
    name = launch.name or s.sim.program.kernel.name
    print(f"tcsim debug: {name}: kernel {s.sim.program.kernel.name}, grid {s.sim.grid}, block {s.sim.block}, "
          f"{len(s.sim.warps)} warps started; seed {s.seed}, timing {'on' if s.sim.arch_config.timed else 'off'}.  "
          f"`help` lists the commands.", flush=True)
    from .checkpoints import ForkCheckpoints, Resumed
    payload = None
    every = getattr(args, "checkpoint_every", 0)
    if every:
        try:
            ForkCheckpoints.attach(s, shell, every=every)
        except Resumed as r:            # (a debugger forked from the first checkpoint: `run` or going back to 0)
            payload = r.payload
    while True:
        try:
            if payload is not None:
                p, payload = payload, None
                shell.resume(p)
            shell.cmdloop()
            break
        except Resumed as r:
            payload = r.payload
        except KeyboardInterrupt:
            shell.out("^C")
    return shell.exit_status
