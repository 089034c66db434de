"""The library half of each command that judges, reports or benchmarks.

``cli/X.py`` parses a command's arguments and ``tools/X.py`` does its work.

:mod:`.validate` and :mod:`.calibrate` judge the model against measured datasets; :mod:`.report`,
:mod:`.compare` and :mod:`.regress` read finished run directories; :mod:`.bench` measures
snapsim's own speed and :mod:`.ccbench` reads a machine file back as single-line
micro-benchmarks; :mod:`.check_config` judges configuration files without running them. The
experiment pipeline (:mod:`simulator.study`) never imports this package.
"""
