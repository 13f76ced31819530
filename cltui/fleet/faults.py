"""The fleet's fault classes: why a host or a column (host:device) did not give a whole
result, each with one meaning, one word in the matrix, one JSON value (``fault``), one
verdict and one JUnit element and type.  The one place these are decided: the host runner
picks the class (:mod:`cltui.fleet.host`), the matrix, the text report, the JUnit writer and
the app read it from here.

=================  ==========================================================  =========
JSON value         meaning                                                       JUnit
=================  ==========================================================  =========
unreachable        the host did not answer (refused, no route, no such name)     error
authentication     the host refused the login, or its host key is not trusted    error
missing-dependency the host lacks what the runner needs (python modules, cmake)  error
connection-lost    the connection ended mid-run (ssh exit 255, the link froze)   error
hang               an enqueue made no progress within ``--timeout``              failure
runner-crash       the runner ended without a result outside any enqueue         error
device-crash       the device failed while an enqueue ran (a crash signal in     failure
                   the driver, or the OpenCL call failed)
cannot-run         the runner's pre-flight: the device cannot run the enqueue    error
cancelled          ctrl-c, SIGTERM, the app's Cancel                             error
error              anything else (the C++ runner does not build, no device...)   error
=================  ==========================================================  =========

A ``failure`` is the kernel's or the device's until shown otherwise; an ``error`` is the
fleet's infrastructure (the enqueue was never tried, or its result was lost on the way).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FAULTS", "Fault", "fault", "host_fault", "junit_kind"]


@dataclass(frozen=True)
class Fault:
    """One class: its JSON value, its word in the matrix, what it means, its JUnit element."""

    value: str
    word: str
    meaning: str
    junit: str  # "failure" or "error"
    host_level: bool = False  # ends the whole host before any device ran


FAULTS: dict[str, Fault] = {f.value: f for f in (
    Fault("unreachable", "unreachable", "the host did not answer", "error", True),
    Fault("authentication", "auth refused", "the host refused the login", "error", True),
    Fault("missing-dependency", "missing dep", "the host lacks what the runner needs",
          "error", True),
    Fault("connection-lost", "conn lost", "the connection ended mid-run", "error"),
    Fault("hang", "HANG", "no progress within the timeout", "failure"),
    Fault("runner-crash", "runner crash", "the runner ended without a result", "error"),
    Fault("device-crash", "CRASH", "the device failed while the enqueue ran", "failure"),
    Fault("cannot-run", "cannot run", "the pre-flight found the device cannot run it",
          "error"),
    Fault("cancelled", "cancelled", "the run was cancelled", "error"),
    Fault("error", "error", "the host could not run the bundle", "error"),
)}  # fmt: skip

# a host's status (cltui.fleet.host.HostFailed) as its fault class
_HOST = {"unreachable": "unreachable", "authentication": "authentication",
         "missing-dependency": "missing-dependency", "connection-lost": "connection-lost",
         "hang": "hang", "timeout": "connection-lost", "cancelled": "cancelled"}


def fault(value: str | None) -> Fault | None:
    """The class of a ``fault`` JSON value (None: none, or not one of ours)."""
    return FAULTS.get(value) if value else None


def host_fault(status: str) -> str | None:
    """A host outcome's status as its fault value (None: the host ran)."""
    if status == "ok":
        return None
    return _HOST.get(status, "error")


def junit_kind(value: str | None) -> tuple[str, str]:
    """``(element, type)`` of a fault in JUnit: ``("failure", "hang")``..."""
    f = fault(value)
    return (f.junit, f.value) if f is not None else ("error", value or "error")
