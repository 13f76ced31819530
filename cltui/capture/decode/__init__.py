"""Decoding one enqueue of a capture: the log line, its kernel's program and signature, each
argument (SetKernelArg dumps, Replay folders, the log), its memory objects and dumps, and
what is wrong with them (:class:`~cltui.capture.model.Problem`).

Rooms: :mod:`~cltui.capture.decode.enqueue` (the enqueue and its transfer fields),
:mod:`~cltui.capture.decode.kernel` (a kernel launch: its arguments in index order),
:mod:`~cltui.capture.decode.enqueue_program` (which program a kernel comes from, its signature),
:mod:`~cltui.capture.decode.args` (one argument: raw bytes, kind, memory object, value),
:mod:`~cltui.capture.decode.dumpchecks` (dumps that disagree with their argument).
"""

from cltui.capture.decode.enqueue import decode_enqueue

__all__ = ["decode_enqueue"]
