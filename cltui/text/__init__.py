"""The text room: general helpers for text that know nothing of captures, devices or the UI.

:mod:`.escape` writes control characters and bidi marks of untrusted text as visible escapes
(every place that shows a capture's text to a user), :mod:`.units` durations and sizes as
text (the app, the CLI and a bundle's ``replay.py``), :mod:`.shellwords` build options split
into words as ``shlex.split`` does, in linear time (the plan, the engine, the explain
rebuilds).

Standard library only, the lowest layer beside :mod:`cltui.process`: every other room may
import it; it imports none of them (``pyproject.toml``'s layers).  An exported bundle carries
:mod:`.units` and :mod:`.shellwords` byte for byte with the replay engine
(:func:`cltui.export.exporter.engine_modules`), under a marker of this package."""
