"""snapsim's generic machine, the experiment pipeline over it, its tools and the CLI.

The machine (topology, caches, coherence, latency, scheduling) and the pipeline know nothing
about PostgreSQL; the PostgreSQL programs live in the folder ``models/``, installed as the package
``snapsim_models``, and run on the machine through :class:`simulator.hardware.machine.Machine` and
:class:`simulator.runtime.scheduler.CpuScheduler`. The one exception is :mod:`simulator.measure`,
the instrument that runs real PostgreSQL servers and pgbench on this host; it never imports the
model.
"""

from simulator.study.experiment import Experiment
from simulator.study.outputs import load
from simulator.study.runner import Result, run
from simulator.version import __version__

__all__ = ["Experiment", "Result", "__version__", "load", "run"]
