"""The bundle's two runners, the products a bundle carries byte for byte:

* ``python/replay.py``: the bundle's ``replay.py`` (the replay engine, ``cltui/replay/engine/``,
  plus a manifest: one implementation, two entry points);
* ``cpp/``: the C++ runner as a bundle lays it out: ``replay.cpp`` (one translation unit),
  ``cpp/*.hpp`` (its parts) and ``CMakeLists.txt``;
* :mod:`.build`: the one recipe that builds the C++ runner (a user, ``cltui latency``, a fleet
  host, the tests).

:func:`cltui.export.exporter.engine_modules` and :func:`cltui.export.exporter.cpp_files` read
them from here."""
