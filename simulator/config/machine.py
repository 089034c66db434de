"""Typed, frozen description of a machine: topology, caches, coherence, latencies, scheduler.

These dataclasses are the contract between machine files (YAML, loaded by
:mod:`simulator.config.machine_file`) and the simulator. They can also be built directly in code.
Each
class checks its own invariants in ``__post_init__`` and raises :class:`ConfigError` naming the
dotted key, so a machine built in a notebook is held to the same rules as one read from a file.

Units: sizes in bytes, times in nanoseconds, frequencies in GHz.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from simulator.errors import ConfigError

LINE_BYTES = 64
"""Cache-line size of every modelled machine (all shipped machines use 64-byte lines)."""

MAX_L3_DOMAINS = 256
"""The most L3 domains (sockets x domains per socket) a machine may have. The shipped machines have
at most 24 and the largest shared-memory servers sold have a few hundred at most; the latency
tables hold one entry per pair of domains and home node, and a coherence miss scans the domains,
so a typo such as 10,000 sockets would otherwise build for minutes before any other check."""


class CoherenceProtocol(StrEnum):
    """Coherence protocol family of a machine."""

    MESI = "MESI"
    """Plain MESI: clean shared copies are not forwarded; a read of M writes back and shares."""
    MESIF = "MESIF"
    """Intel: the most recent reader of a shared line holds it in F and forwards it."""
    MOESI = "MOESI"
    """AMD: a read of an M line leaves the writer in O (dirty, shared) and it keeps forwarding."""


class L3Inclusion(StrEnum):
    """How the shared L3 of a domain relates to the private caches below it."""

    INCLUSIVE = "inclusive"
    """Every privately cached line is also in the L3; an L3 eviction back-invalidates (pre-SKX)."""
    NON_INCLUSIVE = "non_inclusive"
    """The L3 is filled by L2 victims and keeps lines on a hit; a snoop filter tracks L2s (SKX+)."""
    VICTIM = "victim"
    """The L3 is filled by L2 victims; an ownership request that hits moves the line out (Zen)."""


class L3Replacement(StrEnum):
    """How a domain's chip (its L3 and its cores' L2s) keeps blocks of data too large for it.

    What :mod:`simulator.runtime.working_set` refills after a context switch; the tracked lines'
    cache sets are LRU whatever this says.
    """

    ADAPTIVE = "adaptive"
    """Thrash-resistant (bimodal / set-dueling insertion): a reuse footprint ``F`` larger than
    the capacity ``C`` keeps ``C / F`` of each block (Intel's L3s from Ivy Bridge on)."""
    LRU = "lru"
    """Least recently used: a cyclic footprint larger than the capacity keeps nothing of it."""
    RANDOM = "random"
    """Random replacement: a block keeps ``W exp(-I / C)`` of ``W`` lines after ``I`` others."""


class HomeRelation(StrEnum):
    """Which parties of a transfer are near the line's home agent (memory node).

    The requester is the core that misses; the holder is the cache that supplies the line (or, for
    an invalidation, the farthest sharer). "Near" means the party's L3 domain is listed in the home
    node's ``near_domains``.
    """

    BOTH = "both"
    REQUESTER = "requester"
    HOLDER = "holder"
    NEITHER = "neither"


def _fail(key: str, message: str) -> ConfigError:
    return ConfigError(key, message)


def _require_choice(key: str, value: str, choices: tuple[str, ...]) -> None:
    """Fail with ``key`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise _fail(key, f"unknown value {value!r} (choose one of: {', '.join(choices)})")


def _require_positive(key: str, value: float) -> None:
    if not value > 0:
        raise _fail(key, f"must be positive, got {value!r}")


def _require_non_negative(key: str, value: float) -> None:
    if not value >= 0:
        raise _fail(key, f"must not be negative, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyConfig:
    """Sockets → L3 domains → cores → SMT hardware threads, all uniform."""

    sockets: int
    domains_per_socket: int
    cores_per_domain: int
    threads_per_core: int

    def __post_init__(self) -> None:
        for name in ("sockets", "domains_per_socket", "cores_per_domain", "threads_per_core"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise _fail(f"topology.{name}", f"must be an integer >= 1, got {value!r}")
        domains = self.sockets * self.domains_per_socket
        if domains > MAX_L3_DOMAINS:
            raise _fail("topology", f"{self.sockets:,} sockets x {self.domains_per_socket:,} L3 "
                        f"domains per socket make {domains:,} L3 domains, more than the "
                        f"{MAX_L3_DOMAINS} the simulator builds (its latency tables grow with "
                        "the square of the domains, and a coherence miss scans them); use fewer "
                        "sockets or domains_per_socket")


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheConfig:
    """One cache level: capacity, associativity (LRU replacement) and load-to-use latency."""

    size_bytes: int
    ways: int
    latency_ns: float
    key: str = "cache"
    """Dotted key used in error messages (``"caches.l2"``)."""

    def __post_init__(self) -> None:
        if isinstance(self.size_bytes, bool) or self.size_bytes <= 0:
            raise _fail(f"{self.key}.size", f"must be positive, got {self.size_bytes!r}")
        if isinstance(self.ways, bool) or not isinstance(self.ways, int) or self.ways < 1:
            raise _fail(f"{self.key}.ways", f"must be an integer >= 1, got {self.ways!r}")
        if self.size_bytes % (LINE_BYTES * self.ways) != 0:
            raise _fail(
                f"{self.key}.ways",
                f"{self.ways} ways do not divide {self.size_bytes} bytes into whole "
                f"{LINE_BYTES}-byte-line sets",
            )
        _require_positive(f"{self.key}.latency", self.latency_ns)

    @property
    def sets(self) -> int:
        """Number of sets."""
        return self.size_bytes // (LINE_BYTES * self.ways)


@dataclass(frozen=True, slots=True, kw_only=True)
class HomeNodeConfig:
    """A home agent / memory node and the L3 domains that are near it."""

    near_domains: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryConfig:
    """Home nodes, DRAM latency and the placement of shared memory on the home nodes.

    ``placement`` is ``"node"`` (every line homed on ``placement_node``, as when one process
    first-touches the whole segment) or ``"interleave"`` (consecutive ``interleave_bytes`` blocks
    rotate over the nodes).
    """

    home_nodes: tuple[HomeNodeConfig, ...]
    dram_near_ns: float
    dram_far_ns: float
    placement: str = "node"
    placement_node: int = 0
    interleave_bytes: int = 4096

    def __post_init__(self) -> None:
        if not self.home_nodes:
            raise _fail("memory.home_nodes", "at least one home node is required")
        _require_positive("memory.dram_latency.near", self.dram_near_ns)
        _require_positive("memory.dram_latency.far", self.dram_far_ns)
        if self.placement not in ("node", "interleave"):
            raise _fail(
                "memory.placement.policy",
                f"unknown policy {self.placement!r} (choose node or interleave)",
            )
        if not 0 <= self.placement_node < len(self.home_nodes):
            raise _fail(
                "memory.placement.node",
                f"{self.placement_node} is not a home node (0..{len(self.home_nodes) - 1})",
            )
        if self.interleave_bytes <= 0 or self.interleave_bytes % LINE_BYTES:
            raise _fail(
                "memory.placement.granularity",
                f"must be a positive multiple of {LINE_BYTES} bytes, got {self.interleave_bytes}",
            )

    def home_of_line(self, line_number: int) -> int:
        """Home node of the line with global line number ``address // 64``."""
        if self.placement == "node":
            return self.placement_node
        block = (line_number * LINE_BYTES) // self.interleave_bytes
        return block % len(self.home_nodes)


@dataclass(frozen=True, slots=True, kw_only=True)
class HomeKeyedLatency:
    """A transfer latency that depends on which parties are near the line's home.

    ``None`` means the relation cannot occur on this machine (checked by :class:`MachineConfig`).
    """

    both: float | None = None
    requester: float | None = None
    holder: float | None = None
    neither: float | None = None

    @classmethod
    def uniform(cls, ns: float) -> HomeKeyedLatency:
        """The same latency whatever the home."""
        return cls(both=ns, requester=ns, holder=ns, neither=ns)

    def get(self, relation: HomeRelation) -> float | None:
        """Latency for ``relation`` (``None`` if not configured)."""
        value: float | None = getattr(self, relation.value)
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyConfig:
    """Transfer latencies by class, in the vocabulary of ccbench and perf c2c.

    * ``smt_sibling_ns``: an atomic on a line the SMT sibling wrote last (shared L1).
    * ``atomic_local_ns``: an uncontended atomic on a line Modified/Exclusive in the own L1.
    * ``local_hit_ns`` / ``local_hitm_ns``: clean / modified line supplied by another core of the
      same L3 domain.
    * ``cross_domain_*``: supplied by another L3 domain of the same socket (AMD CCX → CCX).
    * ``remote_*``: supplied by a cache on another socket.

    Invalidating a sharer costs the clean-hit latency of its class; an upgrade whose sharers are
    all gone costs ``upgrade_ns`` (the round trip to the directory). Invalidations go out in
    parallel: a store that invalidates several sharers waits for the farthest, plus
    ``invalidation_per_extra_sharer_ns`` for each sharer after the first (the home's serial
    issue of snoops and collection of acknowledgements; 0 = fully parallel).
    """

    smt_sibling_ns: float
    atomic_local_ns: float
    local_hit_ns: float
    local_hitm_ns: float
    upgrade_ns: float
    cross_domain_hit: HomeKeyedLatency | None = None
    cross_domain_hitm: HomeKeyedLatency | None = None
    remote_hit: HomeKeyedLatency | None = None
    remote_hitm: HomeKeyedLatency | None = None
    invalidation_per_extra_sharer_ns: float = 0.0

    def __post_init__(self) -> None:
        if not self.invalidation_per_extra_sharer_ns >= 0:
            raise _fail("latency.invalidation_per_extra_sharer",
                        f"must not be negative, got {self.invalidation_per_extra_sharer_ns!r}")
        for name in ("smt_sibling_ns", "atomic_local_ns", "local_hit_ns", "local_hitm_ns",
                     "upgrade_ns"):
            _require_positive(f"latency.{name.removesuffix('_ns')}", getattr(self, name))
        for name in ("cross_domain_hit", "cross_domain_hitm", "remote_hit", "remote_hitm"):
            keyed = getattr(self, name)
            if keyed is None:
                continue
            for relation in HomeRelation:
                value = keyed.get(relation)
                if value is not None:
                    _require_positive(f"latency.{name}.{relation.value}", value)


@dataclass(frozen=True, slots=True, kw_only=True)
class MlpConfig:
    """Memory-level parallelism of scans: how many line misses overlap.

    ``stream`` applies to independent loads (a dense array walked in order); ``indirect`` to loads
    whose address comes from a previous load (in PostgreSQL, ``pgprocnos[i]`` → ``PGXACT``).
    """

    stream: float
    indirect: float

    def __post_init__(self) -> None:
        for name in ("stream", "indirect"):
            value = getattr(self, name)
            if not value >= 1:
                raise _fail(f"mlp.{name}", f"must be >= 1 (overlapping misses), got {value!r}")


LINE_SERVICE_RULES = ("fifo", "home")
"""How a contended line serves its misses (``line_service.rule``): ``fifo``, ownership transfers
and reads of a modified line one at a time in request order, each occupying the line for its
transfer latency; ``home``, every miss served by another cache (reads of a shared line too)
one at a time at the line's home for a service time by request kind and distance, and an owner
keeps serving its own accesses until the next request's snoop reaches it (see
:class:`LineServiceConfig`)."""

SERVICE_KINDS = ("read_modified", "read_shared", "ownership")
"""Request kinds of :class:`LineServiceConfig` service times: a read of a line modified in
another cache, a read of a clean line another cache supplies, and an ownership request (a store or
atomic that fetches the line or invalidates its sharers)."""

SERVICE_DISTANCES = ("local", "cross_domain", "remote")
"""Distances of a service time: the supplier (or the farthest sharer) in the requester's L3
domain, in another domain of its socket, or on another socket."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LineServiceConfig:
    """How one contended line serves its misses (the ``line_service`` section).

    ``rule`` is one of :data:`LINE_SERVICE_RULES`; the other settings apply to ``home`` only.

    * ``service_ns[kind][distance]``: how long a miss of that kind occupies the line's home
      (the next miss to the line starts when it ends), at least the transfer's own latency;
      0 (the default) means exactly its latency. Kinds :data:`SERVICE_KINDS`, distances
      :data:`SERVICE_DISTANCES`.
    * ``owner_window``: the hardware thread that received the line through the queue keeps
      serving its own accesses (at the cost of a hit) after the next transfer has started, for
      this fraction of that transfer's service time: the time its snoop takes to reach the
      owner. 0 = never. An SMT sibling's atomic while the core holds the line takes its turn at
      the core (``smt_sibling`` latency), not at the home.
    * ``transfer_overlap``: the fraction of a transfer's latency that its request spends on
      the way to the line's home, overlapping the transfers queued ahead of it (pipelined
      transfers of a hot line: the home forwards the next request to the owner-to-be while
      the previous data is in flight). The transfer occupies the home for the rest of its
      latency (or its service time, if longer) from when its request arrives; the requester
      still waits its full latency. 0 (the default) = no overlap: each transfer occupies the
      home for its whole latency from its request.
    * ``local_batch``: how the home picks the next request (arbitration). 1 (the default):
      first come, first served. N > 1: a request from the socket of the requests the home
      serves goes ahead of waiting requests from other sockets, as long as the home has not
      served N transfers to that socket in a row (socket-local batching); every queued
      transfer is then charged as coming from the copies the line has at its turn (see
      :meth:`simulator.hardware.coherence.reference.ReferenceCoherence._arbitrate`).
    """

    rule: str = "fifo"
    owner_window: float = 0.0
    service_ns: tuple[tuple[float, float, float], ...] = ((0.0, 0.0, 0.0),) * 3
    transfer_overlap: float = 0.0
    local_batch: int = 1

    def __post_init__(self) -> None:
        _require_choice("line_service.rule", self.rule, LINE_SERVICE_RULES)
        if not 0.0 <= self.owner_window <= 1.0:
            raise _fail("line_service.owner_window",
                        f"must be between 0 and 1 (a fraction of a transfer), got "
                        f"{self.owner_window!r}")
        if not 0.0 <= self.transfer_overlap < 1.0:
            raise _fail("line_service.transfer_overlap",
                        f"must be at least 0 and below 1 (a fraction of a transfer's latency), "
                        f"got {self.transfer_overlap!r}")
        if isinstance(self.local_batch, bool) or not isinstance(self.local_batch, int) or (
                self.local_batch < 1):
            raise _fail("line_service.local_batch",
                        f"must be a whole number of transfers, at least 1 (1 = first come, "
                        f"first served), got {self.local_batch!r}")
        if len(self.service_ns) != len(SERVICE_KINDS) or any(
                len(row) != len(SERVICE_DISTANCES) for row in self.service_ns):
            raise _fail("line_service.service", "needs one time per kind and distance")
        for kind, row in zip(SERVICE_KINDS, self.service_ns, strict=True):
            for distance, value in zip(SERVICE_DISTANCES, row, strict=True):
                _require_non_negative(f"line_service.service.{kind}.{distance}", value)

    @property
    def home(self) -> bool:
        """Whether the ``home`` rule applies."""
        return self.rule == "home"


SCHEDULER_POLICIES = ("cfs", "fifo")
"""Run-queue orders: Linux CFS's virtual runtime, or first in, first out."""

FIRST_PLACEMENTS = ("spread", "spread_all", "lowest")
"""``spread``: a new busy task (one a model declares to run most of the time) goes to the LLC
domain with the most idle threads (the balanced state Linux's load balancer reaches), any other
to the machine's lowest fully idle core, else its lowest idle thread (its parent's node, where
Linux forks it and its balancer leaves it); ``spread_all``: every new task spreads (an
ablation); ``lowest``: every one takes the lowest idle core (an ablation)."""

RUN_QUEUE_KINDS = ("per_cpu", "global")
"""``per_cpu``: one run queue per hardware thread with wake-up preemption and load balancing, as
Linux; ``global``: one machine-wide queue that balances perfectly (an ablation)."""

DEFAULT_WAKEUP_GRANULARITY_NS = 4e6
"""How much less virtual runtime a waking task needs than the running one to preempt it (ns).

Linux CFS before 6.6, ``sysctl_sched_wakeup_granularity`` in kernel/sched/fair.c: 1 ms scaled
by ``1 + ilog2(min(CPUs, 8))`` (the default logarithmic tunable scaling), 4 ms on every machine
with 8 or more CPUs."""

DEFAULT_MIGRATION_COST_NS = 0.5e6
"""``sysctl_sched_migration_cost`` of Linux (kernel/sched/fair.c), 0.5 ms: a CPU whose average
idle period is shorter does not pull work from other run queues when it goes idle
(``newidle_balance``)."""

DEFAULT_BALANCE_INTERVAL_NS = 4e6
"""Interval of the periodic load balancing that moves a queued task to an idle CPU (ns).

ASSUMPTION, range 1-8 ms: Linux balances idle CPUs from the scheduler tick of a CPU with two or
more runnable tasks (``nohz_balancer_kick`` in kernel/sched/fair.c), so within about a tick;
4 ms is the tick of ``CONFIG_HZ=250``, the setting of the Debian and Ubuntu generic kernels
(1 ms with ``HZ=1000``). The domains' own intervals (their CPU count in ms) are longer and
are not modelled."""

DEFAULT_SLEEPER_CREDIT_NS = 12e6
"""How far before the queue's minimum virtual runtime a waking task may be placed (ns).

Linux CFS before EEVDF (6.6), ``place_entity`` in kernel/sched/fair.c: a waking task gets
``max(its vruntime, min_vruntime - thresh)`` with ``thresh = sysctl_sched_latency``, halved by
the default ``GENTLE_FAIR_SLEEPERS``. ``sysctl_sched_latency`` is 6 ms scaled by
``1 + ilog2(min(CPUs, 8))`` (the default logarithmic tunable scaling), i.e. 24 ms on every
machine with 8 or more CPUs: 12 ms."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    """OS scheduling costs and run-queue policy of the machine.

    ``smt_throughput`` is the combined throughput of two busy SMT siblings relative to one thread
    alone (1.0 = no gain, each runs at half speed; 2.0 = no interference), for ordinary code.
    ``smt_throughput_high_ipc`` is the same for code that alone already issues near the core's
    width (a tight loop over cached data, such as a scan of an array; ``None``: as ordinary
    code): two such threads share one pipeline's issue slots (A. Fog, *The microarchitecture of
    Intel, AMD and VIA CPUs*, §11.14 for Skylake: no advantage from two threads per core for code
    above about two instructions per clock). Each thread's rate depends on its own code's kind
    while its sibling is busy. ``policy`` orders the
    run queue: ``cfs`` by virtual runtime, a waking task placed at most ``sleeper_credit_ns``
    before the queue's minimum (Linux CFS before 6.6), or ``fifo``. ``run_queues`` is
    ``per_cpu`` (Linux: wake-up preemption past ``wakeup_granularity_ns``, new-idle pulls gated
    by ``migration_cost_ns``, periodic balancing every ``balance_interval_ns``) or ``global``
    (see ``docs/scheduler.md``). ``first_placement`` places a new task: ``spread`` (a busy task
    in the LLC domain with the most idle threads, any other on the lowest idle core),
    ``spread_all`` or ``lowest`` (ablations; see :data:`FIRST_PLACEMENTS`).
    ``epoll_sync_wakeup``: whether a wake-up delivered through epoll keeps the waker's
    synchronous hint (Linux's ``WF_SYNC``): ``ep_poll_callback`` in fs/eventpoll.c woke an epoll
    waiter with a plain ``wake_up()`` until commit 900bbaae67e9 ("epoll: Add synchronous wakeup
    support for ep_poll_callback", Linux 6.13, backported to the stable kernels in December
    2024); a task woken through ``poll``/``select`` always keeps it.
    """

    time_slice_ns: float
    context_switch_ns: float
    wakeup_ns: float
    ipi_exit_ns: float = 0.0
    smt_throughput: float = 1.0
    smt_throughput_high_ipc: float | None = None
    policy: str = "cfs"
    sleeper_credit_ns: float = DEFAULT_SLEEPER_CREDIT_NS
    run_queues: str = "per_cpu"
    wakeup_granularity_ns: float = DEFAULT_WAKEUP_GRANULARITY_NS
    migration_cost_ns: float = DEFAULT_MIGRATION_COST_NS
    balance_interval_ns: float = DEFAULT_BALANCE_INTERVAL_NS
    epoll_sync_wakeup: bool = False
    first_placement: str = "spread"

    def __post_init__(self) -> None:
        _require_positive("scheduler.time_slice", self.time_slice_ns)
        _require_non_negative("scheduler.context_switch", self.context_switch_ns)
        _require_non_negative("scheduler.wakeup", self.wakeup_ns)
        _require_non_negative("scheduler.ipi_exit", self.ipi_exit_ns)
        _require_non_negative("scheduler.sleeper_credit", self.sleeper_credit_ns)
        _require_non_negative("scheduler.wakeup_granularity", self.wakeup_granularity_ns)
        _require_non_negative("scheduler.migration_cost", self.migration_cost_ns)
        _require_positive("scheduler.balance_interval", self.balance_interval_ns)
        _require_choice("scheduler.run_queues", self.run_queues, RUN_QUEUE_KINDS)
        _require_choice("scheduler.first_placement", self.first_placement, FIRST_PLACEMENTS)
        _require_choice("scheduler.policy", self.policy, SCHEDULER_POLICIES)
        if not 1.0 <= self.smt_throughput <= 2.0:
            raise _fail(
                "scheduler.smt_throughput",
                f"must be between 1.0 and 2.0, got {self.smt_throughput!r}",
            )
        high = self.smt_throughput_high_ipc
        if high is not None and not 1.0 <= high <= 2.0:
            raise _fail("scheduler.smt_throughput_high_ipc",
                        f"must be between 1.0 and 2.0, got {high!r}")

    @property
    def high_ipc_smt_throughput(self) -> float:
        """``smt_throughput_high_ipc``, or ``smt_throughput`` when it is not set."""
        high = self.smt_throughput_high_ipc
        return self.smt_throughput if high is None else high


IDLE_WAKE_PATHS = ("mwait", "hlt")
"""How an idle hardware thread waits: ``mwait`` (monitoring its run-queue flags, so a waker's
store wakes it without an interrupt) or ``hlt`` (halted: only an interrupt, an IPI, wakes it)."""

IDLE_GOVERNORS = ("menu", "shallowest")
"""How an idle thread's state is chosen: Linux's ``menu`` governor, or always the shallowest."""

DEFAULT_IDLE_TIMER_HORIZON_NS = 100e6
"""Time to the next timer an idle thread sees when no task armed one there (ns)."""


@dataclass(frozen=True, slots=True)
class IdleStateConfig:
    """One CPU idle state (a C-state) as the kernel's idle driver declares it.

    ``exit_latency_ns`` and ``target_residency_ns`` are the values the governor uses (the
    driver's table); ``wake_latency_ns`` is what a task waking on a thread in this state waits
    for the thread (the measured exit where one is published, else the declared one).
    ``core_scope``: a core-level state (core C6), entered only when every thread of the core is
    in it, which flushes the core's private caches on entry; a thread that asked for it while a
    sibling was awake sat in the deepest thread-level state below it instead.
    """

    name: str
    exit_latency_ns: float
    target_residency_ns: float
    wake_latency_ns: float
    core_scope: bool = False

    def check(self, key: str) -> None:
        """Raise :class:`ConfigError` at ``key`` if a value is impossible."""
        if not self.name:
            raise _fail(f"{key}.name", "must not be empty")
        _require_non_negative(f"{key}.exit_latency", self.exit_latency_ns)
        _require_non_negative(f"{key}.target_residency", self.target_residency_ns)
        _require_non_negative(f"{key}.wake_latency", self.wake_latency_ns)


@dataclass(frozen=True, slots=True, kw_only=True)
class IdleConfig:
    """CPU idle states of the machine's hardware threads and how Linux chooses among them.

    ``states`` lists the driver's states from the shallowest; the polling state (busy-waiting,
    no exit latency) comes before them implicitly, as in ``intel_idle``. An empty list is a
    machine (or a guest) that only halts: every idle thread waits in the first state there is.
    ``timer_horizon_ns`` is the time to the next timer an idle thread sees when no task armed a
    timer there (the tick is stopped; a kernel's background timers are further away).
    """

    wake: str
    governor: str = "menu"
    states: tuple[IdleStateConfig, ...] = ()
    timer_horizon_ns: float = DEFAULT_IDLE_TIMER_HORIZON_NS

    def __post_init__(self) -> None:
        _require_choice("idle.wake", self.wake, IDLE_WAKE_PATHS)
        _require_choice("idle.governor", self.governor, IDLE_GOVERNORS)
        _require_positive("idle.timer_horizon", self.timer_horizon_ns)
        names: set[str] = set()
        for index, state in enumerate(self.states):
            key = f"idle.states[{index}]"
            state.check(key)
            if state.name in names:
                raise _fail(f"{key}.name", f"{state.name!r} appears twice")
            names.add(state.name)
            if index:
                before = self.states[index - 1]
                if state.target_residency_ns < before.target_residency_ns:
                    raise _fail(f"{key}.target_residency",
                                "must not be below the state before it (states go from the "
                                "shallowest to the deepest)")
                if before.core_scope and not state.core_scope:
                    raise _fail(f"{key}.scope", "a thread-level state cannot follow a core-level "
                                                "one")


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelThreadConfig:
    """A kernel thread that takes CPU in bursts, more of it the more processes run.

    Linux's DAMON thread ``kdamond`` (``mm/damon/core.c``, ``kdamond_fn``) checks a sample of
    pages, then sleeps its sample interval; on physical addresses each check walks the page's
    reverse map (``mm/damon/paddr.c``), so a burst grows with the processes that map the same
    pages (a server's shared memory, its binary). ``cpu_share`` is the thread's share of one CPU
    beside no process, ``cpu_share_per_process`` what each server process adds, ``period_ns``
    the time from one burst to the next (DAMON's sample interval). The model:
    ``docs/scheduler.md``, *A kernel thread's bursts*.
    """

    name: str
    period_ns: float
    cpu_share: float
    cpu_share_per_process: float

    def __post_init__(self) -> None:
        if not self.name:
            raise _fail("kernel_thread.name", "must not be empty")
        _require_positive("kernel_thread.period", self.period_ns)
        _require_non_negative("kernel_thread.cpu_share", self.cpu_share)
        _require_non_negative("kernel_thread.cpu_share_per_process", self.cpu_share_per_process)
        if self.cpu_share > 1.0:
            raise _fail("kernel_thread.cpu_share",
                        f"is a share of one CPU (0 to 1), got {self.cpu_share!r}")

    def share(self, processes: int) -> float:
        """The thread's share of one CPU beside ``processes`` server processes (at most 1)."""
        return min(1.0, self.cpu_share + self.cpu_share_per_process * processes)


@dataclass(frozen=True, slots=True, kw_only=True)
class MachineConfig:
    """A complete machine. Cross-section invariants are checked here."""

    name: str
    description: str
    clock_ghz: float
    virtualized: bool
    topology: TopologyConfig
    protocol: CoherenceProtocol
    l3_inclusion: L3Inclusion
    l1d: CacheConfig
    l2: CacheConfig
    l3: CacheConfig
    memory: MemoryConfig
    latency: LatencyConfig
    mlp: MlpConfig
    scheduler: SchedulerConfig
    idle: IdleConfig | None = None
    line_service: LineServiceConfig = field(default_factory=LineServiceConfig)
    l3_replacement: L3Replacement = L3Replacement.LRU
    """How the chip keeps working sets larger than itself (``coherence.l3_replacement``)."""
    kernel_thread: KernelThreadConfig | None = None
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        _require_positive("clock", self.clock_ghz)
        if not self.name:
            raise _fail("name", "must not be empty")
        n_domains = self.topology.sockets * self.topology.domains_per_socket
        for index, node in enumerate(self.memory.home_nodes):
            for domain in node.near_domains:
                if not 0 <= domain < n_domains:
                    raise _fail(
                        f"memory.home_nodes[{index}].near_domains",
                        f"domain {domain} does not exist (0..{n_domains - 1})",
                    )
        if not self.l1d.latency_ns <= self.l2.latency_ns <= self.l3.latency_ns:
            raise _fail("caches", "latencies must not decrease from l1d to l2 to l3")
        if self.l1d.size_bytes > self.l2.size_bytes:
            raise _fail("caches.l1d.size", f"{self.l1d.size_bytes} bytes is larger than "
                        f"caches.l2.size ({self.l2.size_bytes} bytes): the L2 includes the L1")
        if self.l3_inclusion is L3Inclusion.INCLUSIVE and self.l3.size_bytes < self.l2.size_bytes:
            raise _fail("caches.l3.size", f"{self.l3.size_bytes} bytes is smaller than one core's "
                        f"caches.l2.size ({self.l2.size_bytes} bytes), which an inclusive L3 "
                        "(coherence.l3_inclusion) must hold")
        self._check_latency_coverage(n_domains)

    def _check_latency_coverage(self, n_domains: int) -> None:
        """Every (class, home relation) that can occur on this topology needs a latency.

        A pair of distinct domains is ``cross_domain`` within a socket and ``remote`` across
        sockets; its home relation depends only on which of the two are near the home node. So
        the relations are found from the count of near domains per socket (a socket with none
        stands for all such sockets), not from every pair of domains.
        """
        del n_domains
        needed: dict[str, set[HomeRelation]] = {"cross_domain": set(), "remote": set()}
        for node in self.memory.home_nodes:
            self._occurring_relations(set(node.near_domains), needed)
        for klass, relations in needed.items():
            if not relations:
                continue
            for suffix in ("hit", "hitm"):
                name = f"{klass}_{suffix}"
                keyed: HomeKeyedLatency | None = getattr(self.latency, name)
                if keyed is None:
                    raise _fail(f"latency.{name}", "is required on this topology")
                for relation in sorted(relations):
                    if keyed.get(relation) is None:
                        raise _fail(
                            f"latency.{name}.{relation.value}",
                            "is required: this home relation occurs on this topology",
                        )

    def _occurring_relations(self, near: set[int],
                             needed: dict[str, set[HomeRelation]]) -> None:
        """Add the home relations of the pairs of distinct domains, for one home node."""
        dps, sockets = self.topology.domains_per_socket, self.topology.sockets
        near_per_socket: dict[int, int] = {}
        for domain in near:
            near_per_socket[domain // dps] = near_per_socket.get(domain // dps, 0) + 1
        plain = sockets - len(near_per_socket)  # sockets without a near domain
        cross = needed["cross_domain"]
        for count in near_per_socket.values():
            far = dps - count
            if count >= 2:
                cross.add(HomeRelation.BOTH)
            if count >= 1 and far >= 1:
                cross.update((HomeRelation.REQUESTER, HomeRelation.HOLDER))
            if far >= 2:
                cross.add(HomeRelation.NEITHER)
        if plain and dps >= 2:
            cross.add(HomeRelation.NEITHER)
        with_near = len(near_per_socket)
        mixed = sum(1 for count in near_per_socket.values() if count < dps)
        with_far = plain + mixed
        remote = needed["remote"]
        if with_near >= 2:
            remote.add(HomeRelation.BOTH)
        if with_near * with_far > mixed:  # a near domain and a far one on different sockets
            remote.update((HomeRelation.REQUESTER, HomeRelation.HOLDER))
        if with_far >= 2:
            remote.add(HomeRelation.NEITHER)


def home_relation(requester_near: bool, holder_near: bool) -> HomeRelation:
    """Classify a transfer by which of its two parties are near the line's home."""
    if requester_near and holder_near:
        return HomeRelation.BOTH
    if requester_near:
        return HomeRelation.REQUESTER
    if holder_near:
        return HomeRelation.HOLDER
    return HomeRelation.NEITHER
