"""OpenCL C types: layouts (OpenCL C alignment rules), numpy dtypes, parsing, decoding, display.

:mod:`.layout` holds the :class:`CType` model, the layout rules and the built-in types;
:mod:`.parse` reads a user-typed element format (``float4``, ``struct { float2 p; ushort id[2]; }``,
``int[3]``) into a ``CType`` (:func:`parse_type`), and the kernel-signature parser
(``signature.py``) builds the same ``CType`` objects from kernel sources; :mod:`.values` decodes
and displays one value.  Pure: stdlib + numpy.
"""

from cltui.capture.cltypes import layout, parse, values
from cltui.capture.cltypes.layout import *  # noqa: F403  (the names of each __all__)
from cltui.capture.cltypes.parse import *  # noqa: F403
from cltui.capture.cltypes.values import *  # noqa: F403

__all__ = [*layout.__all__, *parse.__all__, *values.__all__]
