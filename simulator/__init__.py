"""snapsim's generic machine: topology, caches, coherence, latency, scheduling and the CLI.

Nothing in this package knows about PostgreSQL; the PostgreSQL programs live in the folder
``models/``, installed as the package ``snapsim_models``, and run on the machine through
:class:`simulator.hardware.machine.Machine` and :class:`simulator.runtime.scheduler.CpuScheduler`.
"""

from simulator.study.experiment import Experiment
from simulator.study.outputs import load
from simulator.study.runner import Result, run
from simulator.version import __version__

__all__ = ["Experiment", "Result", "__version__", "load", "run"]
