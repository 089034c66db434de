"""9.6+ group clear of xids at commit, shared by the 13 and 14 families.

A committing backend with an xid that finds ProcArrayLock busy joins a group whose leader clears
every member's entry under one exclusive acquisition (``ProcArrayGroupClearXid``, pa:485@13,
pa:773@14; citations as in :mod:`snapsim_models.snapshots`). The members sleep on their
semaphores until the leader wakes them, each wake-up charged to the leader
(:data:`~snapsim_models.lwlock.WAKE_CYCLES`). The CLOG and its group update are not modelled.
"""

from __future__ import annotations

import weakref

import simpy

from simulator.hardware.codes import Op
from simulator.hardware.tracked import Ops
from simulator.runtime.engine import ProcessGenerator

from ..backend import Backend, Category
from ..lwlock import WAKE_CYCLES, LockMode
from .base import SnapshotAlgorithm


class GroupClearCommit(SnapshotAlgorithm):
    """9.6+ commit of a transaction with an xid: the group clear when ProcArrayLock is busy."""

    group: GroupClear

    def _new_group_clear(self) -> GroupClear:
        head = self.tracked.access(self.shmem.proc_hdr, 0, "procArrayGroupFirst", Op.RMW)
        return GroupClear(self, head)

    def end_transaction_with_xid(self, backend: Backend) -> ProcessGenerator:
        """Conditional exclusive acquire, else join the group clear (pa:416@13, pa:654@14)."""
        taken = yield from self.proc_array_lock.conditional_acquire(
            backend, LockMode.EXCLUSIVE, Category.COMMIT)
        if taken:
            yield from self._end_xid_and_release(backend)
        else:
            yield from self.group.join(backend)



class GroupClear:
    """9.6+ ``ProcArrayGroupClearXid`` (pa:485@13, pa:773@14).

    A backend that fails the conditional exclusive acquire pushes itself on the group list (CAS on
    ``procArrayGroupFirst``, a PROC_HDR line). The first member becomes the leader: it takes
    ProcArrayLock exclusively, detaches the list (atomic exchange), clears every member's entry,
    releases and wakes the members, which sleep on their semaphores meanwhile.
    """

    def __init__(self, algorithm: GroupClearCommit, head: Ops) -> None:
        # A weak reference: the algorithm owns this object (no cycle for the collector to walk).
        self._algorithm = weakref.ref(algorithm)
        self.head = head
        self.read_head = head.with_op(Op.LOAD)
        self.members: list[Backend] = []
        self.done: dict[int, simpy.Event] = {}

    def join(self, backend: Backend) -> ProcessGenerator:
        """Push ``backend`` on the list; the first member leads the clear, the others sleep."""
        algorithm = self._algorithm()
        assert algorithm is not None, "the snapshot algorithm is gone"
        push = algorithm.own(backend, "group_member") + self.read_head + self.head
        yield from backend.ops(push, Category.COMMIT, lock_line=True)
        yield from backend.sync()
        leader = not self.members
        self.members.append(backend)
        if not leader:
            event = backend.env.event()
            self.done[backend.connection] = event
            yield from backend.sleep(event, Category.LOCK_WAIT)
            return
        lock = algorithm.proc_array_lock
        yield from lock.acquire(backend, LockMode.EXCLUSIVE, Category.COMMIT)
        yield from backend.ops(self.head, Category.COMMIT, lock_line=True)  # exchange
        group, self.members = self.members, []
        for member in group:
            yield from algorithm._clear_xid(backend, member)
        yield from lock.release(backend, LockMode.EXCLUSIVE, Category.COMMIT)
        followers = [m for m in group if m is not backend]
        if followers:
            yield from backend.flush()  # the followers wake at the leader's logical time
        for member in followers:
            yield from backend.ops(algorithm.own(member, "group_member"), Category.COMMIT)
            if backend.task is not None and member.task is not None:
                backend.task.wakes(member.task, sync=False)
            self.done.pop(member.connection).succeed()
        if followers:
            yield from backend.compute(WAKE_CYCLES * len(followers), Category.COMMIT)

