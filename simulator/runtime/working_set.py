"""Private working sets of tasks: where each is warm, what is left of it, what a cold start costs.

A task (a process or a client thread) may have a private working set of ``W`` lines: its own data
(stack, heap, caches), which no other task touches, and its code: a read-only block shared by
every task that runs the same program (a shared block, :meth:`WorkingSets.shared`), which any of
them may have left in a core's caches. The coherence layer tracks only shared lines; this module
tracks the working sets as blocks of lines in two LRU stacks:

* per core, its private caches (the L2, shared by the core's SMT threads), of the L2's size;
* per L3 domain, what the domain keeps on chip (its L3, plus its cores' L2s when the L3 is
  non-inclusive or a victim cache: L2 victims fill the L3 and a line is in one or the other).

When a task starts running on a core (:meth:`WorkingSets.start`) its block moves to the top of
the core's stack and of the domain's stack with all ``W`` lines (a run touches its whole working
set). What each stack still holds of a block depends on its reuse distance ``D``: the lines of
the other blocks touched since the block last ran (R. L. Mattson, J. Gecsei, D. R. Slutz,
I. L. Traiger, "Evaluation techniques for storage hierarchies", IBM Systems Journal 9(2), 1970),
and on the cache's replacement rule (``rule``):

* the core's L2 is LRU in both rules: the blocks at the bottom lose lines until the stack fits
  its capacity, so a block is whole when ``D + W`` fits and gone when ``D`` alone fills the L2
  (Intel's L2s are QLRU, which keeps nothing of a loop larger than the cache, as LRU does:
  A. Abel, J. Reineke, "nanoBench", ISPASS 2020, and https://uops.info/cache.html). It is exact
  for the simulator's own caches (LRU sets, ``Machine.pollute`` spreads a footprint evenly over
  the sets), which ``tests/simulator/runtime/test_working_set.py`` checks against the coherence
  kernel;
* the domain's chip, ``rule="adaptive"`` (the default): a thrash-resistant last-level cache
  keeps the share ``C / (D + W)`` of a block whose footprint ``D + W`` exceeds its capacity
  ``C``, all of it otherwise. Intel's L3s from Ivy Bridge on switch by set dueling between QLRU
  and a variant that inserts most new lines at the eviction end (uops.info, as above; H. Wong,
  "Intel Ivy Bridge Cache Replacement Policy", blog.stuffedcow.net, 2013: the hit rate of a
  loop larger than the L3 falls gradually instead of to zero), the bimodal insertion of
  M. Qureshi, A. Jaleel, Y. Patt, S. Steely, J. Emer, "Adaptive insertion policies for high
  performance caching", ISCA 2007, which keeps about ``C`` lines of a loop of ``F > C`` lines:
  the hit rate ``C / F``. Random replacement keeps less (``h = exp(-(1 - h) F / C)``: 0.49
  instead of 0.71 at ``F = 1.41 C``): the lower end of the range;
* ``rule="random"``: random replacement, the lower end of that range: each line brought onto
  the chip evicts a random one, so a block keeps ``W exp(-I / C)`` after ``I`` lines were brought
  in since it last ran;
* ``rule="lru"`` (the first model, kept for ablation): the chip is LRU too, so every block of a
  loop larger than the chip is evicted whole before its task runs again.

The lines missing from the core's L2 are refilled before the task's work, each from where it is:

* still in the L2 of the core the task last ran on (a migration): at the transfer latency
  between the two cores (same L3 domain: the local HIT; another domain of the socket: the
  cross-domain HIT; another socket: the remote HIT; clean lines, the home taken near the old
  core's domain);
* evicted from that L2 (by other tasks, or flushed by a core-level idle state: a flush writes the
  lines back to the L3, which an inclusive L3 holds already and a non-inclusive or victim L3
  receives) but still on chip in the domain: at the L3 latency from the same domain, else at
  the transfer latency from the old domain;
* evicted from the domain's chip too: from DRAM (near or far to the requester's domain, the home
  being near the domain of the task's first run).

A shared code block is read-only: a task taking it to another core leaves the old core its copy,
and the lines the new core lacks come from the domain's chip at the L3 latency (another task of
the program ran there) or from DRAM near the domain.

A refill costs ``sum(lines x latency) / mlp``, the machine's overlap of independent misses:
``mlp.indirect`` for a working set of loads along pointers and code (the default), ``mlp.stream``
for one walked in address order (``streaming``: an array such as lmbench ``lat_ctx``'s, which the
L2's stream prefetcher fetches ahead). The context-switch cost growing with the working set is
measured by lmbench ``lat_ctx`` (L. McVoy, C. Staelin, "lmbench: Portable tools for performance
analysis", USENIX 1996; ``simulator/tools/ctxbench.py`` reproduces it on a machine file) and by
C. Li, C. Ding, K. Shen, "Quantifying the cost of context switch", ExpCS 2007; Linux treats a
task as cache-hot for ``sysctl_sched_migration_cost`` = 0.5 ms (``kernel/sched/fair.c``).

Left out: a running task's block is refreshed only when it starts on a CPU (a long run beside a
busy SMT sibling can lose lines it is touching), shared lines and the models' per-transaction
footprints in the stacks (they pass through the coherence kernel's caches, not these), writebacks
and bandwidth. A task's first run finds its whole working set in memory (near the domain it
runs in): the steady state of a task that runs rarely (a connection idle for 100 ms finds its
lines evicted from the chip by everything else). A busy task may instead start warm
(``warm_start``): its block and its code already whole on the core of its first run, the steady
state of a process that ran for seconds before the measured window (pgbench measures after its
connections are set up), whose one cold start a short simulated warm-up could not absorb.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

from simulator.config.machine import LINE_BYTES, L3Inclusion, MachineConfig
from simulator.hardware.latency import CLEAN, LatencyTables
from simulator.hardware.topology import Topology

__all__ = ["DEFAULT_REFILL_RULE", "REFILL_RULES", "WorkingSet", "WorkingSets"]

REFILL_RULES = ("adaptive", "lru", "random")
"""Replacement rules of a domain's chip: thrash-resistant (``C / (D + W)`` of a block kept
beyond the capacity), LRU (the first model, for ablation) or random replacement (the lower
end of the adaptive rule's range); the module docstring."""
DEFAULT_REFILL_RULE = "adaptive"


class WorkingSet:
    """One task's private working set: its size and where it was last warm.

    Attributes:
        lines: the private part's size in cache lines (>= 0).
        code: the program's shared code block, if any (a block of its own, :meth:`shared`).
        core: the core it last ran on (``None`` before its first run).
        home_domain: the L3 domain of its first run (its memory's NUMA node is near it).
        warm_start: its first run finds it (and its code) whole on its core: no refill.
        streaming: it is walked in address order (refilled at ``mlp.stream``, not
            ``mlp.indirect``).
    """

    __slots__ = ("code", "core", "home_domain", "lines", "streaming", "warm_start")

    def __init__(self, lines: int, code: WorkingSet | None = None,
                 warm_start: bool = False, streaming: bool = False) -> None:
        self.lines = lines
        self.code = code
        self.core: int | None = None
        self.home_domain = -1
        self.warm_start = warm_start
        self.streaming = streaming


@dataclass(slots=True)
class _Stack:
    """An LRU stack of working-set blocks: resident lines per block, bottom (LRU) first."""

    capacity: int
    blocks: OrderedDict[WorkingSet, int]
    total: int = 0

    def resident(self, block: WorkingSet) -> int:
        return self.blocks.get(block, 0)

    def remove(self, block: WorkingSet) -> int:
        lines = self.blocks.pop(block, 0)
        self.total -= lines
        return lines

    def push(self, block: WorkingSet, lines: int) -> None:
        """``block`` becomes the most recent with ``lines``; the least recent lose the excess."""
        blocks = self.blocks
        total = self.total - blocks.pop(block, 0) + lines
        blocks[block] = lines
        capacity = self.capacity
        while total > capacity:
            bottom = next(iter(blocks))
            held = blocks[bottom]
            excess = total - capacity
            if held <= excess:
                del blocks[bottom]
                total -= held
            else:
                blocks[bottom] = held - excess
                total = capacity
        self.total = total

    def clear(self) -> None:
        self.blocks.clear()
        self.total = 0


class _ReuseStack:
    """A thrash-resistant cache's blocks: resident lines from the reuse distance (``adaptive``).

    Every block keeps its size and the instant (a push count) it was last pushed; a Fenwick tree
    over the instants sums the lines of the blocks pushed since, the block's LRU stack distance
    ``D``, in ``O(log n)``. A block holds ``W`` lines while ``D + W`` fits the capacity ``C``,
    else ``W x C / (D + W)`` (the module docstring).
    """

    __slots__ = ("_at", "_next", "_tree", "capacity", "total")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.total = 0
        """Lines of all the blocks (each once, whatever it holds)."""
        self._at: dict[WorkingSet, tuple[int, int]] = {}
        """Per block: its last push's instant and its lines then."""
        self._tree = [0] * 1025
        self._next = 1

    def resident(self, block: WorkingSet) -> float:
        entry = self._at.get(block)
        if entry is None:
            return 0.0
        instant, lines = entry
        footprint = self.total - self._prefix(instant) + lines  # D + W
        if footprint <= self.capacity:
            return lines
        return lines * self.capacity / footprint

    def remove(self, block: WorkingSet) -> float:
        held = self.resident(block)
        entry = self._at.pop(block, None)
        if entry is not None:
            self._add(entry[0], -entry[1])
            self.total -= entry[1]
        return held

    def push(self, block: WorkingSet, lines: int) -> None:
        """``block`` becomes the most recent, with ``lines``."""
        self.remove(block)
        if self._next >= len(self._tree):
            self._compact()
        instant = self._next
        self._next += 1
        self._at[block] = (instant, lines)
        self._add(instant, lines)
        self.total += lines

    def clear(self) -> None:
        self._at.clear()
        self._tree = [0] * 1025
        self._next = 1
        self.total = 0

    def _prefix(self, instant: int) -> int:
        """Lines of the blocks pushed at or before ``instant``."""
        tree = self._tree
        total = 0
        while instant > 0:
            total += tree[instant]
            instant -= instant & -instant
        return total

    def _add(self, instant: int, lines: int) -> None:
        tree = self._tree
        size = len(tree)
        while instant < size:
            tree[instant] += lines
            instant += instant & -instant

    def _compact(self) -> None:
        """Renumber the blocks' instants 1..n in order, in a tree with room to grow."""
        order = sorted(self._at.items(), key=lambda item: item[1][0])
        self._tree = [0] * (max(1024, 4 * len(order)) + 1)
        self._at = {}
        self._next = 1
        for block, (_, lines) in order:
            self._at[block] = (self._next, lines)
            self._add(self._next, lines)
            self._next += 1


class _RandomStack:
    """A randomly replacing cache's blocks (``random``, the lower end of the adaptive range).

    Each line brought onto the chip evicts a random one: a block keeps each of its lines with
    probability ``exp(-I / C)`` after ``I`` lines were brought in since its last push (a block
    whose refill found ``h`` of it on chip brings in ``W (1 - h)``). Nothing is brought in
    while the blocks fit, so a loop that fits stays whole.
    """

    __slots__ = ("_at", "_inserted", "capacity")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._inserted = 0.0
        """Lines brought onto the chip so far."""
        self._at: dict[WorkingSet, tuple[float, int]] = {}
        """Per block: the insertion count just after its last push, and its lines."""

    def resident(self, block: WorkingSet) -> float:
        entry = self._at.get(block)
        if entry is None:
            return 0.0
        since, lines = entry
        return lines * math.exp(-(self._inserted - since) / self.capacity)

    def remove(self, block: WorkingSet) -> float:
        held = self.resident(block)
        self._at.pop(block, None)
        return held

    def push(self, block: WorkingSet, lines: int) -> None:
        """``block`` is touched whole: the lines it lacked are brought in, evicting others."""
        self._inserted += max(lines - self.resident(block), 0.0)
        self._at[block] = (self._inserted, lines)

    def clear(self) -> None:
        self._at.clear()
        self._inserted = 0.0


class WorkingSets:
    """The private working sets of a machine's tasks (model: the module docstring).

    Args:
        machine: the machine (cache sizes, L3 inclusion, latencies, ``mlp``).
        topology: its topology, and ``tables`` its latency tables (built from ``machine`` if
            not given).
        rule: the domains' chips' replacement, ``adaptive`` or ``lru`` (:data:`REFILL_RULES`).

    The tasks count their refills (``Task.refills``, ``Task.refill_ns``) and so does the
    scheduler (``SchedulerStats.refills``, ``SchedulerStats.refill_ns``).
    """

    def __init__(self, machine: MachineConfig, topology: Topology | None = None,
                 tables: LatencyTables | None = None, rule: str = DEFAULT_REFILL_RULE) -> None:
        if rule not in REFILL_RULES:
            raise ValueError(f"refill rule must be one of {', '.join(REFILL_RULES)}, got {rule!r}")
        self.rule = rule
        """The chips' replacement rule (:data:`REFILL_RULES`)."""
        topo = topology or Topology.from_config(machine)
        tables = tables or LatencyTables.build(machine, topo)
        l2_lines = machine.l2.size_bytes // LINE_BYTES
        l3_lines = machine.l3.size_bytes // LINE_BYTES
        cores_per_domain = machine.topology.cores_per_domain
        on_chip = (l3_lines if machine.l3_inclusion is L3Inclusion.INCLUSIVE
                   else l3_lines + cores_per_domain * l2_lines)
        self.l2_lines = l2_lines
        """Capacity of a core's stack, in lines."""
        self.on_chip_lines = on_chip
        """Capacity of a domain's stack, in lines."""
        self._core_domain = [topo.domain_of_core(c) for c in range(topo.n_cores)]
        self._l2 = [_Stack(l2_lines, OrderedDict()) for _ in range(topo.n_cores)]
        self._chip: list[_Stack | _ReuseStack | _RandomStack] = [
            _ReuseStack(on_chip) if rule == "adaptive"
            else _RandomStack(on_chip) if rule == "random"
            else _Stack(on_chip, OrderedDict()) for _ in range(topo.n_domains)]
        n_dom = topo.n_domains
        home_of = []
        for domain in range(n_dom):
            near = [h for h in range(tables.near.shape[1]) if tables.near[domain, h]]
            home_of.append(near[0] if near else 0)
        self._home_of = home_of
        self._transfer_ns = [[float(tables.transfer_ns[CLEAN, req, sup, home_of[sup]])
                              for sup in range(n_dom)] for req in range(n_dom)]
        """``[requester][supplier]`` a clean line from another core or domain (home near the
        supplier)."""
        self._dram_ns = [[float(tables.dram_ns[req, home_of[first]]) for first in range(n_dom)]
                         for req in range(n_dom)]
        """``[requester][first domain]`` a line from DRAM homed near the first run's domain."""
        self._l3_ns = tables.l3_ns
        self.mlp = machine.mlp.indirect
        """Overlap of the misses of a refill along pointers (and of every code refill)."""
        self.mlp_stream = machine.mlp.stream
        """Overlap of the misses of a ``streaming`` working set's refill."""
        self._code: dict[str, WorkingSet] = {}

    def shared(self, program: str, lines: int) -> WorkingSet:
        """The read-only code block of ``program`` (``lines`` lines), one for all its tasks.

        Raises:
            ValueError: ``lines`` is not a positive integer, or differs from the size the
                program's block was created with.
        """
        _check_lines(lines, positive=True)
        block = self._code.get(program)
        if block is None:
            block = self._code[program] = WorkingSet(lines)
        elif block.lines != lines:
            raise ValueError(f"program {program!r} has {block.lines} lines of code, not {lines}")
        return block

    def new(self, lines: int, code: WorkingSet | None = None,
            warm_start: bool = False, streaming: bool = False) -> WorkingSet:
        """A task's working set: ``lines`` private lines and its program's ``code`` block.

        ``warm_start``: the first run pays nothing (the block and the code are taken as already
        on its core: a busy process that ran before the window). ``streaming``: its private
        lines are walked in address order and refill at ``mlp.stream``.

        Raises:
            ValueError: ``lines`` is negative or not an integer, or 0 without ``code``.
        """
        _check_lines(lines, positive=code is None)
        return WorkingSet(lines, code, warm_start, streaming)

    def start(self, block: WorkingSet, core: int) -> float:
        """The task of ``block`` starts running on ``core``: the refill it pays first (ns).

        O(1) when the block is the most recent on the core with all its lines and its code block
        is whole there (a task that stays warm pays nothing).
        """
        l2 = self._l2[core]
        blocks = l2.blocks
        lines = block.lines
        code = block.code
        if (blocks and next(reversed(blocks)) is block and blocks[block] == lines
                and (code is None or blocks.get(code) == code.lines)):
            return 0.0
        domain = self._core_domain[core]
        previous = block.core
        warm = previous is None and block.warm_start  # a first run that finds it all on the core
        cost = 0.0 if code is None or warm else self._code_refill(code, core, domain)
        mlp = self.mlp_stream if block.streaming else self.mlp
        if previous is None:  # the first run: everything from memory, or all warm
            block.home_domain = domain
            if not warm:
                cost += lines * self._dram_ns[domain][domain] / mlp
        else:
            old_domain = self._core_domain[previous]
            chip = self._chip[old_domain]
            on_chip = min(chip.resident(block), lines)
            if previous == core:
                held = l2.resident(block)
                on_chip = max(on_chip, held)
                refill = (on_chip - held) * self._l3_ns
            else:
                held = min(self._l2[previous].remove(block), lines)
                on_chip = max(on_chip, held)
                if old_domain == domain:
                    refill = held * self._transfer_ns[domain][domain] + (
                        on_chip - held) * self._l3_ns
                else:
                    refill = on_chip * self._transfer_ns[domain][old_domain]
                    chip.remove(block)
            refill += (lines - on_chip) * self._dram_ns[domain][block.home_domain]
            cost += refill / mlp
        block.core = core
        chip = self._chip[domain]
        if code is not None:
            l2.push(code, code.lines)
            chip.push(code, code.lines)
        l2.push(block, lines)
        chip.push(block, lines)
        return cost

    def _code_refill(self, code: WorkingSet, core: int, domain: int) -> float:
        """The refill of a shared code block on ``core``: from the domain's chip, else DRAM."""
        lines = code.lines
        held = self._l2[core].resident(code)
        if held == lines:
            return 0.0
        on_chip = max(min(self._chip[domain].resident(code), lines), held)
        return ((on_chip - held) * self._l3_ns
                + (lines - on_chip) * self._dram_ns[domain][domain]) / self.mlp

    def flush(self, core: int) -> None:
        """``core``'s private caches were flushed (a core-level idle state).

        Its blocks leave them for the domain's L3 (written back), where the domain's stack
        keeps them.
        """
        self._l2[core].clear()

    def resident(self, block: WorkingSet, core: int) -> int:
        """Lines of ``block`` in ``core``'s private caches now (a test seam)."""
        return self._l2[core].resident(block)


def _check_lines(lines: object, *, positive: bool) -> None:
    """``lines`` must be an integer, positive or at least not negative."""
    least = 1 if positive else 0
    if isinstance(lines, bool) or not isinstance(lines, int) or lines < least:
        kind = "positive" if positive else "non-negative"
        raise ValueError(f"a working set must have a {kind} number of lines, got {lines!r}")
