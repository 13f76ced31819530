"""The process room: every child process cltui starts and every temporary folder it makes.

:mod:`.child` is the one supervisor of cltui's Python children (replay per device, Oclgrind
checks, experiments, the pre-flight: their own session, a JSON event pipe, a hang when no
event comes for ``timeout`` seconds, cancel, the kill of the whole group, how the child
ended); :mod:`.bounded` runs a tool (CMake, the C++ runner) with the same rules and waits for
its output; :mod:`.lifecycle` owns what a kill must not strand: temp folders of the kinds its
``KINDS`` registry lists (locked, pid-named, swept when their owner is dead), children that
die with their parent, :func:`.lifecycle.kill_group` and :func:`.lifecycle.exit_cause`.  The
capture's reader process (:mod:`cltui.capture.background`), a fleet's ssh sessions
(:mod:`cltui.fleet.transport`) and ``cltui latency``'s runs use the same kill.

Standard library only (and :mod:`cltui.errors`, :mod:`cltui.progress`): every other room may
import it; it imports none of them (``pyproject.toml``'s layers)."""
