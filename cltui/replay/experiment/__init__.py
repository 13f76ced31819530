"""Experiments: a range of a capture with changes (a variant), run against the capture's own
configuration (A/B) or over many configurations (a sweep).

Rooms: :mod:`.variant` (the typed model), :mod:`.patch` (a unified diff, applied strictly),
:mod:`.apply` (a variant on a plan: a changed plan), :mod:`.store` (named variants in the
user's data folder), :mod:`.feasible` (work sizes a device refuses), :mod:`.worker` (the
child: A and the variants in one process per device, through the engine), :mod:`.job` (the
parent side), :mod:`.stats` (medians, bootstrap intervals), :mod:`.report` (A/B reports),
:mod:`.sweep` (points, the results file, ranking).
"""
