"""Analyses built on the capture model and the replay engine.

- :mod:`cltui.analysis.diverge`: where two captures of one program part (first enqueue,
  argument, element), from their Post dumps; :mod:`~cltui.analysis.diverge_report` holds
  what it found (statuses, per-argument and per-enqueue results, the report).
- :mod:`cltui.analysis.check`: replay a range on Oclgrind with its checks on (the child
  process, the retries after a crash, the report's status); :mod:`~cltui.analysis.oclgrind`
  parses Oclgrind's output, :mod:`~cltui.analysis.attribute` maps each finding to an enqueue,
  a kernel and a source line, :mod:`~cltui.analysis.check_report` holds the report.
- :mod:`cltui.analysis.probe`: arguments whose outputs vary across repetitions on one device.
- :mod:`cltui.analysis.shrink`: delta debugging (ddmin) of a failing range.

This package sits in the replay layer: it may import :mod:`cltui.capture` and
:mod:`cltui.replay`, never the TUI, the exporters or textual, and it imports pyopencl only
inside the child processes the replay runner starts.
"""
