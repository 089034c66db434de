"""The PostgreSQL model's coefficients of the memory and wall-time estimate, and their fit.

:mod:`simulator.study.estimate` owns the formula; these are the numbers of this model, handed to
it as ``PostgresModel.estimate_coefficients``. The lines are the most any shipped algorithm
tracks (``pg91``: 2.4 per idle connection; about 4 per active client; 1100 fixed, ``csn``'s
log). The TPS is an upper bound of the select-only model (38,000 per client, one select-only
client does 33-38k, at most 0.8 client per hardware thread: each also needs its pgbench). The
other coefficients were fitted by least squares (then rounded, memory upwards) to the peak RSS
(``ru_maxrss``) and wall time of 21 points, each in a fresh process on a 2-vCPU EPYC VM (Python
3.11, NumPy 2.4, load 1-2): gold5215-2s, westmere-ex-8s, threadripper-3990x, epyc-9654-2s and
sapphire-rapids-2s; pg91, pre14 and post14; 1 to 15,000 clients, 0 to 20,000 idle or
mostly-idle connections, 0.2 to 40 ms simulated. The memory part was refitted when the machine
files took the ``home`` line-service rule (its per-thread tenures are allocated whole but touched
only for the lines that pass through a queue, so an idle connection adds no resident memory
beyond the state that counts its lines: ``bytes_per_idle`` 0). Error on those points: memory
-7 % to +15 % of the measured peak (median +5 %); wall time 0.5x to 2.2x the measured; the
points and figures are in ``tests/simulator/study/test_estimate.py``. Far outside the fitted
range it extrapolates (200,000 clients on gold5215-2s, 6 ms: about 4.2 GB; 2,000,000 clients:
about 40 GB); points held out of the fit were checked under the former ``fifo`` rule only.
"""

from __future__ import annotations

from simulator.study.workload_model import ModelEstimate

ESTIMATE_COEFFICIENTS = ModelEstimate(
    lines_fixed=1100.0, lines_per_client=4.0, lines_per_idle=2.4, tps_per_client=38_000.0,
    busy_thread_share=0.8, running_idle_tps=10.0, bytes_per_running=12e3, bytes_per_idle=0.0,
    bytes_per_transaction=1e3, wall_s_per_running=200e-6, wall_s_per_idle=10e-6,
    wall_s_per_transaction=110e-6)
"""The coefficients of :mod:`simulator.study.estimate`'s formula for this model (fitted above)."""
