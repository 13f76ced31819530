"""One answer to "what is one element of this argument's data" (cltui.capture.elements):
decoded once with the enqueue from the kernel signature, the same for every buffer argument
of real captures as the signature's pointee type."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cltui.capture import open_capture
from cltui.capture.elements import element_ctype, element_dtype
from cltui.capture.model import ArgKind
from cltui.capture.signature import parse_program


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
def test_buffer_elements_are_the_signatures_pointee(pyocl_pocl: Path, opencv: Path) -> None:
    seen = 0
    for root in (pyocl_pocl, opencv):
        cap = open_capture(root)
        for pos in range(len(cap)):
            row = cap.row(pos)
            if row.kind.label != "kernel":
                continue
            enq = cap.enqueue(row.number)
            if enq.program is None or row.kernel is None:
                continue
            parsed = parse_program(cap.program_source(enq.program), enq.program.options)
            sig = parsed.kernels.get(row.kernel)
            for arg in enq.args:
                if arg.kind is not ArgKind.BUFFER or sig is None:
                    continue
                want = sig.params[arg.index].ctype  # the pointee (the widget parsed it so)
                if want.kind == "pointer" and want.element is not None:
                    want = want.element
                got = element_ctype(arg)
                assert want is not None and got is not None, (row.number, arg.index)
                assert got.name == want.name and got.size == want.size
                dump = arg.pre or arg.post
                if dump is not None:
                    dt, shape = element_dtype(arg, dump)
                    assert shape is None and dt == np.dtype(want.dtype)
                seen += 1
    assert seen > 50
