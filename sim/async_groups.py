"""Per-thread async-groups: the bookkeeping shared by cp.async (PTX ISA §9.7.9.25.3, commit_group / wait_group /
wait_all) and the bulk copies (§9.7.9.25.6, cp.async.bulk.commit_group / wait_group{.read}).

Each thread has ops issued since its last commit (``open``) and committed groups, oldest first.  A wait for
"at most N pending groups" needs the events of every older group still in flight; fully completed groups are
forgotten.  The tables live on the CTA (``cta.bulk_groups``, ``cta.cp_async_groups``), keyed by (warp, lane).
"""
from __future__ import annotations

from collections import deque


class AsyncGroups:
    __slots__ = ("open", "groups")

    def __init__(self):
        self.open: list = []
        self.groups: deque = deque()

    def commit(self) -> None:
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
