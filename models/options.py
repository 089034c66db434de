"""The PostgreSQL model's options in an experiment (the ``options:`` section).

Keys (all optional):

* ``costs``: the global software cost model. Absent: ``configs/postgres-costs.yaml``. A string:
  another cost-model file (relative to the experiment file). A mapping: overrides of single
  values of the default model, e.g. ``{client: 20000 cycles}`` or, from the command line,
  ``--set options.costs.backend.select_only="40000 cycles"``.
* ``batch``: statements per round trip of the ``batched`` workload (default 1).
* ``mix``: the scripts of the ``mix`` workload with their weights, e.g. ``{select-only: 9,
  tpcb: 1}`` (default none; required by that workload, ignored by the others).
* ``think_time``: client think time / network round trip between transactions (default ``0 us``).
* ``entries_per_chunk``: procArray entries per scan chunk, the granularity at which other
  backends' writes interleave with a scan (default 2048; a simulation parameter, not
  PostgreSQL's). Results agree within 1 % with a chunk four times smaller
  (``tests/models/test_chunk_convergence.py``, ``docs/performance.md``); 2048 entries are 3-4 us of
  scan, and a scan is one SimPy event per chunk, so the default sets much of the simulation's
  speed.
* ``atomics``: how the words updated by load + CAS loops are issued, per user: ``lwlock``
  (``LWLockAttemptLock``) and ``buffer`` (``PinBuffer``, ``UnpinBuffer`` and the hot pages'
  mapping and content locks), each ``read_cas`` (default: the load and each CAS are separate
  operations at the simulation clock, so a CAS fails when the word changed in between, as in
  PostgreSQL and on the hardware) or ``fused`` (the load and the CAS as one call that never
  fails: the ablation), e.g. ``--set options.atomics.lwlock=fused``.
* ``pgbench_scale``: pgbench's scale factor (``-s``; default 100), which sets how many inner
  pages ``pgbench_accounts_pkey`` has per level and so how often two transactions share one
  (:mod:`snapsim_models.btree`); the root is shared by all whatever the scale.
* ``pin``: how ``PinBuffer``/``UnpinBuffer`` update a buffer header: ``atomic`` (default, 9.6+:
  a CAS loop) or ``spinlock`` (9.2-9.5: under the buffer-header spinlock, with ``s_lock.c``'s
  spinning; the what-if of the 9.6 change, commit 48354581a4, which reported up to 2.5x
  read-only pgbench at 128 clients on an 8-socket machine). Ignored by ``pg91``, whose pins
  are spinlocks already.
* ``background_threads``: threads (``-j``) of the pgbench process that drives the
  ``mostly-idle`` connections (default 4; ASSUMPTION: the published runs do not give it; 0
  drops that process, and each connection's client side costs no CPU).
* ``background_start``: how the ``mostly-idle`` connections' sleeps are phased when a run
  starts: ``random`` (default: each connection's first query uniformly within one sleep
  period, a background spread out) or ``together`` (as pgbench starts them: every client
  begins its script at the same instant after its threads' start barrier, ``threadRun`` in
  ``pgbench.c``, so every first sleep of 100 ms ends at once, here at the run's start a walk
  step apart; each later sleep starts when its answer is read, so the connections stay bunched
  by as long as their queries take to drain: one burst per sleep period).
* ``layout``: layout what-ifs, a list of edits applied in order to the shared memory of every
  version (default none). Each names a struct or array by its region name, as the per-line table
  labels it (``PGXACT``, ``PGPROC``, ``VariableCache``, ``xids``, ``MainLWLockArray``,
  ``BufferDescriptors``, ...), and a field as ``region.field``:
  ``{move: PGXACT.xmin, to: own_line}`` (the field alone on a new line of each element, the
  element 64-aligned), ``{move: PGXACT.xmin, to: array}`` (the field in a dense array of its
  own, ``PGXACT.xmin``, allocated after ``PGXACT``; every access to it goes there),
  ``{pad: PGXACT, to: 64}`` (elements 64 B apart), ``{align: PGXACT, to: 64}`` (the start
  address), ``{reorder: PGXACT, fields: [xid, vacuumFlags, overflowed, nxids]}`` (those fields
  packed in that order). Exact rules in :mod:`simulator.hardware.layout_edits`. An edit applies
  to each version that has its struct and fields and is skipped by the others (``PGXACT`` is
  pre14's only); one that fits no version is an error. Example: ``--set
  'options.layout=[{move: PGXACT.xmin, to: own_line}]'``.
* ``run_ahead``: how far a backend may run ahead of the simulation clock for a memory operation
  (default ``0 us``: every memory operation in time order; a speed/accuracy knob of the
  simulation, see :mod:`snapsim_models.backend`).
* ``lwlock_queue``: how LWLock waiters queue (:mod:`snapsim_models.lwlock`): ``overtake``
  (default: PostgreSQL's ``LWLockAttemptLock`` and ``LWLockWakeup``, a shared acquirer takes the
  lock whenever no exclusive holder has it) or ``fifo`` (the ablation: no newcomer overtakes a
  waiter, so a snapshot queues behind a waiting exclusive acquirer). It matters where exclusive
  and shared acquisitions mix (commits with an xid, ``churn``); select-only runs take none.
* ``churn``: connections that come and go (:mod:`snapsim_models.churn`), a mapping of
  ``rate_per_s`` (connections per second, each running one transaction of the workload and
  disconnecting, their clients off the machine; default 0: none) and ``per_transaction``
  (``true``: every active client reconnects for every transaction, ``pgbench -C``; default
  ``false``), e.g. ``--set options.churn.rate_per_s=1000``. Each connect and disconnect runs the
  version's ``InitProcess``, ``ProcArrayAdd``, ``ProcArrayRemove`` and ``ProcKill``; the private
  work is the cost model's ``connection`` section. The ``csn`` algorithm models no connect or
  disconnect: churn with it is an error. ``--single-client-tps`` finds the work scale with its
  probe's options, churn included, so a sweep over rates is best run on the global cost model as is
  (``configs/experiments/whatif-churn.yaml`` does).

* ``working_sets``: ``true`` charges every backend and pgbench thread the refill of its working
  set (the cost model's ``working_set`` sizes: private data and the program's shared code) when
  it starts running on a core that lost it: after a migration, a core C6 flush, or other
  processes on the core (:mod:`simulator.runtime.working_set`). Default ``true``; ``--set
  options.working_sets=false`` charges none (the ablation ``no-working-sets``).
* ``refill_rule``: how the working sets' lines survive on a chip
  (:mod:`simulator.runtime.working_set`): ``adaptive`` (default: a thrash-resistant L3 keeps
  the share ``C / (D + W)`` of a block whose reuse footprint ``D + W`` exceeds its capacity
  ``C``, as the adaptive L3s of Intel parts from Ivy Bridge on do), ``random`` (random
  replacement: the lower end of that rule's range) or ``lru`` (the first model, kept for
  ablation: a loop of working sets larger than the chip refills them whole from DRAM).

Resolving fills every default in and replaces ``costs`` by the complete cost-model document, so
the resolved options alone reproduce a run.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from simulator.config.units import parse_time_ns
from simulator.config.values import check_keys, describe_kind, expect_int, join_key
from simulator.errors import ConfigError
from simulator.hardware.layout_edits import LayoutEdit, parse_layout_edits
from simulator.runtime.working_set import DEFAULT_REFILL_RULE, REFILL_RULES

from .btree import DEFAULT_PGBENCH_SCALE, inner_level_pages
from .buffers import PIN_PROTOCOLS
from .costs import DEFAULT_COSTS_FILE, PgCosts, costs_from_dict, read_costs_document
from .lwlock import DEFAULT_QUEUE as DEFAULT_LWLOCK_QUEUE
from .lwlock import QUEUES
from .shmem.build import MAX_INNER_PAGES, check_layout_edits
from .snapshots import ALGORITHMS
from .snapshots.base import ATOMIC_USERS
from .workloads import MIX, WORKLOADS

OPTION_KEYS = ("costs", "batch", "think_time", "entries_per_chunk", "atomics", "pgbench_scale",
               "pin", "mix", "run_ahead", "background_threads", "layout", "churn",
               "lwlock_queue", "working_sets", "background_start", "refill_rule")
CHURN_KEYS = ("rate_per_s", "per_transaction")
ATOMICS_MODES = ("read_cas", "fused")
DEFAULT_BATCH = 1
DEFAULT_THINK_TIME = "0 us"
DEFAULT_ENTRIES_PER_CHUNK = 2048
DEFAULT_RUN_AHEAD = "0 us"
DEFAULT_BACKGROUND_THREADS = 4
BACKGROUND_STARTS = ("random", "together")
DEFAULT_BACKGROUND_START = "random"
DEFAULT_WORKING_SETS = True


@dataclass(frozen=True, slots=True)
class PgOptions:
    """Resolved options as Python values."""

    costs: PgCosts
    batch: int
    think_time_ns: float
    entries_per_chunk: int
    run_ahead_ns: float
    fused_atomics: frozenset[str]
    """Users whose load + CAS loops are fused (``atomics: {user: fused}``)."""
    pgbench_scale: int = DEFAULT_PGBENCH_SCALE
    pin_protocol: str = "atomic"
    mix: tuple[tuple[str, float], ...] = ()
    background_threads: int = DEFAULT_BACKGROUND_THREADS
    background_start: str = DEFAULT_BACKGROUND_START
    """``random`` or ``together`` (``options.background_start``)."""
    layout: tuple[LayoutEdit, ...] = ()
    """Layout what-ifs, in order (``options.layout``)."""
    churn_rate_per_s: float = 0.0
    """Connections arriving per second for one transaction each (``options.churn``)."""
    churn_per_transaction: bool = False
    """Every active client reconnects for every transaction (``pgbench -C``)."""
    lwlock_queue: str = DEFAULT_LWLOCK_QUEUE
    """How LWLock waiters queue (``options.lwlock_queue``)."""
    working_sets: bool = DEFAULT_WORKING_SETS
    """Processes refill their working sets after going cold (``options.working_sets``)."""
    refill_rule: str = DEFAULT_REFILL_RULE
    """How working sets survive on a chip (``options.refill_rule``)."""

    @property
    def churns(self) -> bool:
        """Whether connections come and go."""
        return self.churn_rate_per_s > 0 or self.churn_per_transaction

    def scaled(self, work_scale: float) -> PgOptions:
        """The same options with the base per-transaction work scaled (the work scale)."""
        if work_scale == 1.0:
            return self
        return dataclasses.replace(self, costs=self.costs.scaled(work_scale))


def resolve_options(options: Mapping[str, object], source: str | None = None) -> dict[str, object]:
    """Validate ``options`` and return them complete (plain YAML data, idempotent).

    Raises:
        ConfigError: an unknown key, a bad value or a bad cost model, named by its dotted path
            under ``options``.
    """
    check_keys(options, "options", OPTION_KEYS, optional=OPTION_KEYS)
    costs = _resolve_costs(options.get("costs"), source)
    batch = expect_int("options.batch", options.get("batch", DEFAULT_BATCH))
    if batch < 1:
        raise ConfigError("options.batch", f"must be at least 1, got {batch}", source)
    think_time = options.get("think_time", DEFAULT_THINK_TIME)
    _time_ns("options.think_time", think_time, source)
    run_ahead = options.get("run_ahead", DEFAULT_RUN_AHEAD)
    _time_ns("options.run_ahead", run_ahead, source)
    chunk = expect_int("options.entries_per_chunk",
                       options.get("entries_per_chunk", DEFAULT_ENTRIES_PER_CHUNK))
    if chunk < 1:
        raise ConfigError("options.entries_per_chunk", f"must be at least 1, got {chunk}", source)
    atomics = _resolve_atomics(options.get("atomics", {}), source)
    scale = expect_int("options.pgbench_scale",
                       options.get("pgbench_scale", DEFAULT_PGBENCH_SCALE))
    if scale < 1:
        raise ConfigError("options.pgbench_scale", f"must be at least 1, got {scale}", source)
    if sum(inner_level_pages(scale)) > MAX_INNER_PAGES:
        raise ConfigError("options.pgbench_scale", f"{scale} gives more inner index pages than "
                          f"the modelled {MAX_INNER_PAGES} buffers hold", source)
    pin = options.get("pin", "atomic")
    if pin not in PIN_PROTOCOLS:
        raise ConfigError("options.pin", f"expected {' or '.join(PIN_PROTOCOLS)}, got {pin!r}",
                          source)
    mix = _resolve_mix(options.get("mix", {}), source)
    background = expect_int("options.background_threads",
                            options.get("background_threads", DEFAULT_BACKGROUND_THREADS))
    if background < 0:
        raise ConfigError("options.background_threads", f"must not be negative, got {background}",
                          source)
    start = options.get("background_start", DEFAULT_BACKGROUND_START)
    if start not in BACKGROUND_STARTS:
        raise ConfigError("options.background_start", f"expected "
                          f"{' or '.join(BACKGROUND_STARTS)}, got {start!r}", source)
    layout = options.get("layout", [])
    try:
        check_layout_edits(parse_layout_edits(layout, "options.layout"),
                           tuple(ALGORITHMS.values()))
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.message, source) from None
    churn = _resolve_churn(options.get("churn", {}), source)
    queue = options.get("lwlock_queue", DEFAULT_LWLOCK_QUEUE)
    if queue not in QUEUES:
        raise ConfigError("options.lwlock_queue", f"expected {' or '.join(QUEUES)}, got "
                          f"{queue!r}", source)
    working_sets = options.get("working_sets", DEFAULT_WORKING_SETS)
    if not isinstance(working_sets, bool):
        raise ConfigError("options.working_sets", "expected true or false, got "
                          f"{describe_kind(working_sets)}", source)
    refill_rule = options.get("refill_rule", DEFAULT_REFILL_RULE)
    if refill_rule not in REFILL_RULES:
        raise ConfigError("options.refill_rule", f"expected {' or '.join(REFILL_RULES)}, got "
                          f"{refill_rule!r}", source)
    return {"costs": costs, "batch": batch, "think_time": think_time, "entries_per_chunk": chunk,
            "atomics": atomics, "pgbench_scale": scale, "pin": str(pin), "mix": mix,
            "run_ahead": run_ahead, "background_threads": background,
            "background_start": str(start), "layout": copy.deepcopy(layout), "churn": churn,
            "lwlock_queue": str(queue), "working_sets": working_sets,
            "refill_rule": str(refill_rule)}


def parse_options(resolved: Mapping[str, object]) -> PgOptions:
    """Turn resolved options (:func:`resolve_options`'s result) into Python values.

    Converts only: the options were checked when the experiment was prepared, once, and a point
    reads no file. Unresolved options (a key missing) raise ``KeyError``.
    """
    full = resolved
    batch, chunk, atomics = full["batch"], full["entries_per_chunk"], full["atomics"]
    scale = full["pgbench_scale"]
    background = full["background_threads"]
    assert isinstance(background, int)
    assert isinstance(atomics, dict)
    assert isinstance(batch, int)
    assert isinstance(chunk, int)
    assert isinstance(scale, int)
    churn = full["churn"]
    assert isinstance(churn, dict)
    return PgOptions(costs=costs_from_dict(full["costs"]), batch=batch,
                     think_time_ns=_time_ns("options.think_time", full["think_time"], None),
                     entries_per_chunk=chunk,
                     run_ahead_ns=_time_ns("options.run_ahead", full["run_ahead"], None),
                     fused_atomics=frozenset(user for user, mode in atomics.items()
                                             if mode == "fused"),
                     pgbench_scale=scale, pin_protocol=str(full["pin"]),
                     mix=_mix_pairs(full["mix"]), background_threads=background,
                     background_start=str(full["background_start"]),
                     layout=parse_layout_edits(full["layout"], "options.layout"),
                     churn_rate_per_s=float(churn["rate_per_s"]),
                     churn_per_transaction=bool(churn["per_transaction"]),
                     lwlock_queue=str(full["lwlock_queue"]),
                     working_sets=bool(full["working_sets"]),
                     refill_rule=str(full.get("refill_rule", DEFAULT_REFILL_RULE)))


def churn_requested(options: Mapping[str, object]) -> bool:
    """Whether (possibly unresolved) options ask for connections that come and go.

    Lenient: a malformed ``churn`` section is :func:`resolve_options`'s to report.
    """
    churn = options.get("churn")
    if not isinstance(churn, Mapping):
        return False
    rate = churn.get("rate_per_s", 0)
    by_rate = (not isinstance(rate, bool) and isinstance(rate, int | float)
               and math.isfinite(rate) and rate > 0)
    return by_rate or churn.get("per_transaction") is True


def _mix_pairs(value: object) -> tuple[tuple[str, float], ...]:
    assert isinstance(value, Mapping)
    return tuple((str(name), float(weight)) for name, weight in value.items())


def _resolve_mix(value: object, source: str | None) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise ConfigError("options.mix", "expected a mapping of script names to weights, got "
                          f"{describe_kind(value)}", source)
    scripts = tuple(w for w in WORKLOADS if w != MIX)
    check_keys(value, "options.mix", scripts, optional=scripts)
    resolved = {}
    for name, weight in value.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
            raise ConfigError(f"options.mix.{name}", f"expected a positive weight, got "
                              f"{weight!r}", source)
        resolved[str(name)] = float(weight)
    return resolved


def _resolve_churn(value: object, source: str | None) -> dict[str, object]:
    if not isinstance(value, Mapping):
        raise ConfigError("options.churn", "expected a mapping of rate_per_s and "
                          f"per_transaction, got {describe_kind(value)}", source)
    check_keys(value, "options.churn", CHURN_KEYS, optional=CHURN_KEYS)
    rate = value.get("rate_per_s", 0)
    if isinstance(rate, bool) or not isinstance(rate, int | float):
        raise ConfigError("options.churn.rate_per_s", "expected connections per second (a "
                          f"number), got {describe_kind(rate)}", source)
    if not (math.isfinite(rate) and rate >= 0):
        raise ConfigError("options.churn.rate_per_s", f"must be a non-negative number, got "
                          f"{rate!r}", source)
    per_transaction = value.get("per_transaction", False)
    if not isinstance(per_transaction, bool):
        raise ConfigError("options.churn.per_transaction", "expected true or false, got "
                          f"{describe_kind(per_transaction)}", source)
    return {"rate_per_s": float(rate), "per_transaction": per_transaction}


def _resolve_atomics(value: object, source: str | None) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError("options.atomics", "expected a mapping of lwlock and buffer to "
                          f"read_cas or fused, got {describe_kind(value)}", source)
    check_keys(value, "options.atomics", ATOMIC_USERS, optional=ATOMIC_USERS)
    resolved = {}
    for user in ATOMIC_USERS:
        mode = value.get(user, "read_cas")
        if mode not in ATOMICS_MODES:
            raise ConfigError(f"options.atomics.{user}", f"expected read_cas or fused, got "
                              f"{mode!r}", source)
        resolved[user] = str(mode)
    return resolved


def _resolve_costs(value: object, source: str | None) -> dict[str, object]:
    if value is None:
        return read_costs_document(DEFAULT_COSTS_FILE)
    if isinstance(value, str):
        path = Path(value)
        if not path.is_absolute() and source is not None:
            path = Path(source).resolve().parent / path
        return read_costs_document(path)
    if not isinstance(value, Mapping):
        raise ConfigError("options.costs", "expected a cost-model file name or a mapping of "
                          f"overrides, got {describe_kind(value)}", source)
    merged = read_costs_document(DEFAULT_COSTS_FILE)
    _merge(merged, value, "options.costs", source)
    try:
        costs_from_dict(merged)
    except ConfigError as exc:
        raise ConfigError(join_key("options.costs", exc.key), exc.message, source) from None
    return merged


def _merge(base: dict[str, object], overrides: Mapping[str, object], path: str,
           source: str | None) -> None:
    """Deep-merge ``overrides`` into ``base``; keys must exist in ``base``."""
    for key, value in overrides.items():
        key_path = join_key(path, str(key))
        if key not in base:
            expected = ", ".join(str(k) for k in base)
            raise ConfigError(key_path, f"unknown key (expected one of: {expected})", source)
        current = base[key]
        if isinstance(current, dict):
            if not isinstance(value, Mapping):
                raise ConfigError(key_path, f"expected a mapping, got {describe_kind(value)}",
                                  source)
            _merge(current, value, key_path, source)
        else:
            base[key] = copy.deepcopy(value)


def _time_ns(key: str, value: object, source: str | None) -> float:
    try:
        ns = parse_time_ns(value)
    except ValueError as exc:
        raise ConfigError(key, str(exc), source) from None
    if ns < 0:
        raise ConfigError(key, f"must not be negative, got {value!r}", source)
    return ns
