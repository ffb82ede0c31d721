"""Per-thread async-groups: the bookkeeping shared by cp.async (PTX ISA §9.7.9.25.3, commit_group / wait_group /
wait_all) and the bulk copies (§9.7.9.25.6, cp.async.bulk.commit_group / wait_group{.read}).

Each thread has ops issued since its last commit (``open``) and committed groups, oldest first.  A wait for
"at most N pending groups" needs the events of every older group still in flight; fully completed groups are
forgotten.  The tables live on the CTA (``cta.bulk_groups``, ``cta.cp_async_groups``), keyed by (warp, lane).
"""
from __future__ import annotations

from collections import deque

import simpy


class AsyncGroups:
    __slots__ = ("open", "groups")

    def __init__(self):
        self.open: list = []
        self.groups: deque = deque()

    # the state changes (apply_*) are made by the warps' door, ExecContext.async_group_join / _commit / _wait
    def apply_join(self, op) -> None:
        """``op`` (just issued by this thread) joins the open group."""
        self.open.append(op)

    def apply_commit(self) -> None:
        """Seal the open ops into a new group (possibly empty)."""
        self.groups.append(self.open)
        self.open = []

    def pending_older(self, keep: int, event: str = "done") -> list:
        """Untriggered ``event`` events (``done`` / ``read_done``) of every group but the ``keep`` newest."""
        while self.groups and all(op.done.triggered for op in self.groups[0]):
            self.groups.popleft()
        older = list(self.groups)[:max(len(self.groups) - keep, 0)]
        return [e for g in older for e in (getattr(op, event) for op in g) if not e.triggered]

    def pending_all(self) -> list:
        """Completion events of every op the thread issued (open or committed) still in flight."""
        return [op.done for op in self.open + [o for g in self.groups for o in g] if not op.done.triggered]


def thread_groups(table: dict, warp_id: int, lane: int) -> AsyncGroups:
    key = (warp_id, int(lane))
    st = table.get(key)
    if st is None:
        st = table[key] = AsyncGroups()
    return st


# ---------------------------------------------------------------------------------- the shared commit / wait runs
def commit_run(kind: str, sync: str):
    """The run function of a commit_group of ``kind`` ('bulk' / 'cp.async'): seal each executing thread's open ops
    into a new group, possibly empty, and report the sync event ``sync`` (:meth:`ExecContext.async_group_commit`)."""
    def run(ctx):
        ctx.async_group_commit(kind, sync)
    return run


def wait_run(kind: str, keep: int, name: str, noun: str, sync: str, event: str = "done", commit_first=False,
             **sync_info):
    """The run function of a wait_group ``keep`` of ``kind``: block each executing thread until at most ``keep`` of
    its newest groups have ``event`` (``done`` / ``read_done``) pending; ``commit_first`` seals the open ops first
    (cp.async.wait_all).  ``name`` and ``noun`` word the wait reason the deadlock report shows."""
    def run(ctx):
        blocked, waits = ctx.async_group_wait(kind, keep, sync, event=event, commit_first=commit_first, **sync_info)
        if waits:
            ctx.block(blocked, simpy.AllOf(ctx.env, waits),
                      f"{name}: {len(waits)} {noun} of older groups still in flight")
    return run
