"""Whether a device takes a step's work sizes: the small, local check of the experiments.

One function, :func:`refusal`, asked once a point's kernels are built: the device's
work-group limits (``CL_DEVICE_MAX_WORK_GROUP_SIZE``, ``CL_DEVICE_MAX_WORK_ITEM_SIZES``), the
built kernel's ``CL_KERNEL_WORK_GROUP_SIZE`` and local memory, and a global size that is a
multiple of the local size (uniform work-groups, as OpenCL 1.2 demands).  A general
feasibility module of the engine can take its place: this is the only caller's contract
(a step, its built kernel, the device: a reason, or None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cltui.replay.engine.schema import StepSpec

if TYPE_CHECKING:
    import pyopencl as cl

__all__ = ["refusal"]


def refusal(step: StepSpec, kernel: cl.Kernel, dev: cl.Device) -> str | None:
    """Why ``dev`` refuses ``step``'s work sizes with ``kernel`` (one line), or None."""
    import pyopencl as cl

    local = [int(x) for x in step.get("local") or []]
    glob = [int(x) for x in step["global"]]
    where = f"enqueue {step['enqueue']} ({step['kernel']})"
    if not local:
        return None
    size = "x".join(map(str, local))
    items = 1
    for x in local:
        items *= x
    limit = int(dev.max_work_group_size)
    if items > limit:
        return f"{where}: local {size} = {items} work-items > the device's {limit}"
    dims = [int(x) for x in dev.max_work_item_sizes]
    for i, x in enumerate(local):
        if i < len(dims) and x > dims[i]:
            return f"{where}: local {size}: dimension {i} > the device's {dims[i]}"
    info = kernel.get_work_group_info
    kmax = int(info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev))
    if items > kmax:
        return f"{where}: local {size} = {items} work-items > the built kernel's {kmax}"
    lmem = int(info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, dev))
    if lmem > int(dev.local_mem_size):
        return f"{where}: {lmem} bytes of local memory > the device's {dev.local_mem_size}"
    for g, x in zip(glob, local, strict=False):
        if g % x:
            return f"{where}: global {'x'.join(map(str, glob))} is not a multiple of local {size}"
    return None
