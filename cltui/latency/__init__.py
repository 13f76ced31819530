"""Launch latency (``cltui latency`` and the app's Latency view): every launch's stages
from the capture and from replays (the Python engine, the exported C++ runner, its bare
launch loop as the floor), the runners' host cost against the floor, the range's
sensitivity to host delay per launch, and a Chrome/Perfetto trace.

Rooms: :mod:`.schema` (the report's TypedDicts), :mod:`.stats` (launch records,
distributions, outliers, block histograms), :mod:`.records` (launches from the engine's
timeline, the C++ runner's rows, the capture's log), :mod:`.fit` (slope, bootstrap
interval, the 40 ns line), :mod:`.trace` (trace events), :mod:`.native` (building and
running the C++ runner), :mod:`.measure` (the whole measurement), :mod:`.text` (the
terminal report).  Layer: above export (it exports the range for the C++ runner), below
the TUI and the commands.
"""
