"""snapsim's generic machine: topology, caches, coherence, latency, scheduling and the CLI.

Nothing in this package knows about PostgreSQL; the PostgreSQL programs live in ``models`` and
run on the machine through :class:`simulator.machine.Machine` and
:class:`simulator.scheduler.CpuScheduler`.
"""

__version__ = "0.1.0"

from simulator.experiment import Experiment, Result, run

__all__ = ["Experiment", "Result", "__version__", "run"]
