"""The kernel's source instrumented to record its values (libclang parses OpenCL C).

Every initialisation (``float f = ...;``), assignment statement (``x = ...;``, ``x += ...;``,
``x++;``) and image write (``write_imagef(img, c, v);``) of the kernel and of the functions
it calls is a *site*.  Before a site runs, the instrumented kernel records its operands (the
variables, vector components and memory reads its expression reads); after it, the value
assigned, lane by lane.  Only the chosen work-items record (their global ids are constants
of the program), each into its own slice of a trace buffer added as the kernel's last
argument: ``[count, dropped, entries[CAP] of 4 words]`` (the counters are private), an entry
``site, iteration | slot << 16 | lane << 24, low word, high word`` (slot 0: the value
assigned; k > 0: operand k; k | :data:`.recorder.ADDRESS`: the address operand k, read from
memory, was read at; site :data:`.recorder.BASE_SITE`: the address of the kernel's pointer
parameter or ``__local`` array k, recorded at the start: an operand's address is an offset
into one of them, for the upstream walk of :mod:`.walk`).  A site records its first
:data:`.recorder.ITERATIONS` runs (loops); the slice holds :data:`.recorder.CAP` entries
(bounded memory).  The functions it calls take the slice and the counters as extra last
parameters (``0`` from the functions that are not traced).  ``dense`` (see
:func:`instrument`) records otherwise.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any

from cltui.analysis.explain.recorder import (
    ADDRESS,
    DENSE,
    HEADER,
    base,
    bits,
    prelude,
    record,
)
from cltui.analysis.explain.source import (
    Base,
    InstrumentError,
    Parsed,
    finish,
    parse,
    pointer_params,
    resource_dir,
)

__all__ = ["Base", "InstrumentError", "Instrumented", "Operand", "Site", "Walk", "instrument",
           "resource_dir", "walk_all"]

_PURE_CALLS = {"get_global_id", "get_local_id", "get_group_id", "get_global_size",
               "get_local_size", "get_num_groups", "get_global_offset", "get_work_dim"}
_SWIZZLE = re.compile(r"^(s[0-9a-fA-F]+|[xyzw]+|lo|hi|even|odd)$")


@dataclass
class Operand:
    text: str
    kind: str  # the scalar kind: float, double, int, uint, long, ulong, ...
    lanes: int
    memory: bool = False  # a read from memory (``p[i]``, ``*p``): its address is recorded


@dataclass
class Site:
    """One recorded statement: where it is and what it records."""

    id: int
    function: str
    line: int
    column: int
    end_column: int  # the expression's columns on ``line`` (1-based, end exclusive)
    what: str  # "init", "assign", "write_image"
    target: str  # the variable / lvalue assigned (the image written)
    expr: str  # the expression whose value is assigned
    kind: str
    lanes: int
    operands: list[Operand] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "function": self.function, "line": self.line,
                "column": self.column, "end_column": self.end_column, "what": self.what,
                "target": self.target, "expr": self.expr, "type": _type_name(self.kind,
                                                                            self.lanes),
                "operands": [o.text for o in self.operands]}  # fmt: skip


@dataclass
class Instrumented:
    source: str
    sites: list[Site]
    items: list[tuple[int, int, int]]
    skipped: int  # statements that could not be recorded (not pure, not a value type)
    dense: list[tuple[int, int, int, int]] | None = None  # row -> (site, slot, lane, part)
    bases: list[Base] = field(default_factory=list)  # memory whose address is recorded
    words: int = 0  # the trace buffer's words when another mode sizes it (:mod:`.watch`)



def _type_name(kind: str, lanes: int) -> str:
    return kind + (str(lanes) if lanes > 1 else "")


# ---------------------------------------------------------------------------- types
_KINDS = {"BOOL": "uint", "CHAR_S": "char", "SCHAR": "char", "CHAR_U": "uchar",
          "UCHAR": "uchar", "SHORT": "short", "USHORT": "ushort", "INT": "int", "UINT": "uint",
          "LONG": "long", "ULONG": "ulong", "FLOAT": "float", "DOUBLE": "double",
          "HALF": "half"}  # fmt: skip


def _value_type(t: Any) -> tuple[str, int] | None:
    """(scalar kind, lanes) of a value type; None for pointers, images, structs."""
    t = t.get_canonical()
    name = t.kind.name
    if name == "EXTVECTOR":
        el = _KINDS.get(t.element_type.get_canonical().kind.name)
        return (el, int(t.element_count)) if el else None
    el = _KINDS.get(name)
    return (el, 1) if el else None


# -------------------------------------------------------------------------- the walk
class Walk:
    def __init__(self, ci: Any, data: bytes, main: str) -> None:
        self.ci, self.data, self.main = ci, data, main
        self.macro_starts: list[int] = []
        self.macro_ends: list[int] = []
        self.edits: list[tuple[int, int, str]] = []  # (offset, order, text)
        self.sites: list[Site] = []
        self.skipped = 0
        self.rec = "cltui_rec"  # cltui_recf in a called function (its slice may be 0)
        self.dense: list[tuple[int, int, int, int]] | None = None  # see :func:`instrument`
        self.kernel = ""
        self.bases: list[Base] | None = None  # None: bases not recorded (dense)

    def record(self, site: int, slot: int, expr: str, kind: str, lanes: int) -> str:
        """The calls that record a value (dense: each word into its own row)."""
        if self.dense is None:
            return record(site, slot, expr, kind, lanes, self.rec)
        out = []
        fn = self.rec.replace("rec", "den")
        for lane in range(lanes):
            e = f"({expr})" if lanes == 1 else f"({expr}).s{lane:x}"
            for part, word in enumerate(bits(e, kind)):
                if part and word == "0u":
                    continue
                out.append(f"{fn}(cltui_t, {len(self.dense)}u, {word});")
                self.dense.append((site, slot, lane, part))
        return " ".join(out)

    def text(self, c: Any) -> str:
        return self.data[c.extent.start.offset : c.extent.end.offset].decode("utf-8", "replace")

    def in_main(self, c: Any) -> bool:
        """Whether ``c`` is spelled in the kernel's file as it stands (not in a header, not
        the expansion of a macro: its text there is the macro's call)."""
        s, e = c.extent.start, c.extent.end
        return bool(s.file and e.file and s.file.name == self.main and e.file.name == self.main
                    and e.offset > s.offset and not self.from_macro(c))  # fmt: skip

    def in_file(self, c: Any) -> bool:
        s, e = c.extent.start, c.extent.end
        return bool(s.file and e.file and s.file.name == self.main and e.file.name == self.main)

    def from_macro(self, c: Any) -> bool:
        """Whether ``c`` lies inside a macro's call (it is the macro's expansion)."""
        lo, hi = c.extent.start.offset, c.extent.end.offset
        k = bisect.bisect_right(self.macro_starts, lo)
        return k > 0 and self.macro_ends[k - 1] >= hi

    def set_macros(self, ranges: list[tuple[int, int]]) -> None:
        """The macro calls' (start, end): starts sorted, the largest end up to each."""
        ranges.sort()
        self.macro_starts = [r[0] for r in ranges]
        self.macro_ends = []
        top = -1
        for _, e in ranges:
            top = max(top, e)
            self.macro_ends.append(top)

    def pure(self, c: Any) -> bool:
        K = self.ci.CursorKind
        if c.kind == K.CALL_EXPR and c.spelling not in _PURE_CALLS:
            return False
        if c.kind == K.COMPOUND_ASSIGNMENT_OPERATOR or (
                c.kind == K.BINARY_OPERATOR and self.op(c) == "="):  # fmt: skip
            return False
        if c.kind == K.UNARY_OPERATOR and {t.spelling for t in c.get_tokens()} & {"++", "--"}:
            return False
        return all(self.pure(ch) for ch in c.get_children())

    def op(self, c: Any) -> str:
        """A binary operator's spelling (the first token after its left operand)."""
        kids = list(c.get_children())
        if not kids:
            return ""
        end = kids[0].extent.end.offset
        for t in c.get_tokens():
            if t.extent.start.offset >= end:
                return str(t.spelling)
        return ""

    def operands(self, c: Any, out: dict[str, Operand], skip: set[str]) -> None:
        """The maximal pure value sub-expressions that read a variable or memory."""
        K = self.ci.CursorKind
        kids = list(c.get_children())
        if c.kind == K.UNEXPOSED_EXPR and len(kids) == 1 and self.text(kids[0]) == self.text(c):
            self.operands(kids[0], out, skip)  # an implicit conversion
            return
        take = False
        if c.kind == K.DECL_REF_EXPR:
            ref = c.referenced
            take = ref is not None and ref.kind in (K.VAR_DECL, K.PARM_DECL) and (
                ref.spelling not in skip)
        elif c.kind in (K.ARRAY_SUBSCRIPT_EXPR, K.MEMBER_REF_EXPR):
            take = self.pure(c)
        elif c.kind == K.UNEXPOSED_EXPR and len(kids) == 1:
            toks = [t.spelling for t in c.get_tokens()]
            take = len(toks) >= 3 and toks[-2] == "." and bool(_SWIZZLE.match(toks[-1])) and (
                self.pure(c))
        elif c.kind == K.UNARY_OPERATOR:
            toks = [t.spelling for t in c.get_tokens()]
            take = bool(toks) and toks[0] == "*" and self.pure(c)
        vt = _value_type(c.type) if take and self.in_main(c) else None
        if vt is not None:
            text = self.text(c)
            vector = bool(kids) and kids[0].type.get_canonical().kind.name == "EXTVECTOR"
            mem = c.kind == K.UNARY_OPERATOR or (
                c.kind == K.ARRAY_SUBSCRIPT_EXPR and not vector)  # not v[0]: no address
            out.setdefault(text, Operand(text, vt[0], vt[1], mem))
            return
        for ch in kids:
            self.operands(ch, out, skip)

    def add_site(self, fn: str, c_expr: Any, what: str, target: str, vt: tuple[str, int],
                 ops: dict[str, Operand]) -> Site:  # fmt: skip
        loc = c_expr.extent.start
        end = c_expr.extent.end
        end_col = end.column if end.line == loc.line else loc.column + len(self.text(c_expr))
        site = Site(len(self.sites), fn, loc.line, loc.column, end_col, what, target,
                    self.text(c_expr), vt[0], vt[1], list(ops.values())[:15])  # fmt: skip
        self.sites.append(site)
        return site

    def before(self, site: Site) -> str:
        if self.dense is not None:
            return ""  # more stores keep PoCL from vectorising the kernel as the original
        out = [self.record(site.id, k + 1, o.text, o.kind, o.lanes)
               for k, o in enumerate(site.operands)]  # fmt: skip
        out += [self.record(site.id, ADDRESS | (k + 1), f"(ulong)&({o.text})", "ulong", 1)
                for k, o in enumerate(site.operands) if o.memory]  # fmt: skip
        return " ".join(out)

    def semicolon(self, offset: int) -> int | None:
        """The offset just after the ``;`` that ends a statement whose expression ends at
        ``offset`` (None: something else follows, a macro's work)."""
        k = offset
        while k < len(self.data) and self.data[k : k + 1] in (b" ", b"\t", b"\r", b"\n"):
            k += 1
        return k + 1 if self.data[k : k + 1] == b";" else None

    def statement(self, fn: str, c: Any) -> None:
        """One statement of a traced function (``c`` is a child of a block or a body)."""
        K = self.ci.CursorKind
        if not self.in_main(c):
            return
        if c.kind == K.DECL_STMT:
            self.declaration(fn, c)
        elif c.kind in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR, K.UNARY_OPERATOR):
            self.assignment(fn, c)
        elif c.kind == K.CALL_EXPR and c.spelling.startswith("write_image"):
            self.image_write(fn, c)
        self.walk(fn, c)

    def declaration(self, fn: str, c: Any) -> None:
        K = self.ci.CursorKind
        after: list[str] = []
        before: list[str] = []
        names: set[str] = set()
        for v in c.get_children():
            if v.kind != K.VAR_DECL:
                continue
            names.add(v.spelling)
            init = [ch for ch in v.get_children() if ch.kind not in (K.TYPE_REF,)]
            self.local_array(fn, c, v)
            vt = _value_type(v.type)
            if not init or vt is None or not self.in_file(init[-1]):
                if init:
                    self.skipped += 1
                continue
            ops: dict[str, Operand] = {}
            self.operands(init[-1], ops, names)
            site = self.add_site(fn, init[-1], "init", v.spelling, vt, ops)
            before.append(self.before(site))
            after.append(self.record(site.id, 0, v.spelling, vt[0], vt[1]))
        if after:
            self.edits.append((c.extent.start.offset, 1, " ".join(b for b in before if b) + " "))
            self.edits.append((c.extent.end.offset, 0, " " + " ".join(after)))

    def local_array(self, fn: str, decl: Any, v: Any) -> None:
        """A ``__local`` array of the kernel: its address recorded after its declaration."""
        t = v.type
        if self.bases is None or fn != self.kernel or "__local" not in t.spelling or (
                t.get_canonical().kind.name != "CONSTANTARRAY"):  # fmt: skip
            return
        self.bases.append(Base(v.spelling, None, int(t.get_size())))
        self.edits.append((decl.extent.end.offset, 0,
                           " " + base(len(self.bases) - 1, v.spelling)))  # fmt: skip

    def assignment(self, fn: str, c: Any) -> None:
        K = self.ci.CursorKind
        kids = list(c.get_children())
        toks = [t.spelling for t in c.get_tokens()]
        if c.kind == K.BINARY_OPERATOR and self.op(c) != "=":
            return
        if c.kind == K.UNARY_OPERATOR and not ({"++", "--"} & {toks[0], toks[-1]}):
            return
        lhs = kids[0] if kids else None
        vt = _value_type(lhs.type) if lhs is not None else None
        end = self.semicolon(c.extent.end.offset)
        if lhs is None or vt is None or end is None or not self.pure(lhs) or (
                not self.in_main(lhs)):  # fmt: skip
            self.skipped += 1
            return
        ops: dict[str, Operand] = {}
        rhs = kids[-1] if c.kind != K.UNARY_OPERATOR else c
        if c.kind != K.BINARY_OPERATOR:  # x += e, x++: x is read too
            self.operands(lhs, ops, set())
        for ch in kids[1:] if c.kind != K.UNARY_OPERATOR else []:
            self.operands(ch, ops, set())
        site = self.add_site(fn, rhs, "assign", self.text(lhs), vt, ops)
        self.edits.append((c.extent.start.offset, 1, "{ " + self.before(site) + " "))
        rec = self.record(site.id, 0, self.text(lhs), vt[0], vt[1])
        self.edits.append((end, 0, " " + rec + " }"))

    def image_write(self, fn: str, c: Any) -> None:
        args = list(c.get_arguments())
        end = self.semicolon(c.extent.end.offset)
        if len(args) < 3 or end is None:
            return
        coord, value = args[1], args[-1]
        vt = _value_type(value.type)
        if vt is None or not self.pure(value) or not self.pure(coord):
            self.skipped += 1
            return
        ops: dict[str, Operand] = {}
        self.operands(coord, ops, set())
        self.operands(value, ops, set())
        site = self.add_site(fn, value, "write_image", self.text(args[0]), vt, ops)
        rec = self.before(site) + " " + self.record(site.id, 0, self.text(value), vt[0], vt[1])
        self.edits.append((c.extent.start.offset, 1, "{ " + rec + " "))
        self.edits.append((end, 0, " }"))

    def walk(self, fn: str, c: Any) -> None:
        """The statements under ``c``: a block's children, the bodies of loops and ifs."""
        K = self.ci.CursorKind
        kids = list(c.get_children())
        if c.kind == K.COMPOUND_STMT:
            body = kids
        elif c.kind == K.IF_STMT:
            body = kids[1:]
        elif c.kind in (K.FOR_STMT, K.WHILE_STMT):
            body = kids[-1:]
        elif c.kind == K.DO_STMT:
            body = kids[:1]
        elif c.kind in (K.CASE_STMT, K.DEFAULT_STMT, K.LABEL_STMT, K.SWITCH_STMT):
            body = kids[-1:]
        else:
            return
        for ch in body:
            self.statement(fn, ch)


def walk_all(p: Parsed, walk: Walk, rec: tuple[str, str] = ("cltui_rec", "cltui_recf")) -> None:
    """Every traced function's statements through ``walk``."""
    walk.set_macros(list(p.macros))
    for name in p.traced:
        body = [ch for ch in p.fns[name].get_children()
                if ch.kind == p.ci.CursorKind.COMPOUND_STMT]  # fmt: skip
        walk.rec = rec[0] if name == p.kernel else rec[1]
        if body:
            walk.statement(name, body[0])


def instrument(source: str, kernel: str, options: str, items: list[tuple[int, int, int]],
               dense: bool = False) -> Instrumented:  # fmt: skip
    """``source`` with kernel ``kernel`` and the functions it calls recording their values
    for the work-items ``items`` (global ids), the trace buffer its last argument, and the
    addresses of the memory the kernel's pointers and ``__local`` arrays name (so that an
    operand read from memory is an offset into one of them).
    ``dense``: every work-item stores each recorded word into its own row of the buffer
    (``row * work-items + linear id``), the last run of a statement only, no operands, with
    no counter and no branch: the kernel is then compiled as the original is (PoCL vectorises it; a
    trace that counts does not keep its relaxed division), at the cost of memory."""
    p = parse(source, kernel, options)
    walk = Walk(p.ci, p.data, p.main)
    walk.kernel = kernel
    if dense:
        walk.dense = []
    walk.bases = [] if dense else pointer_params(p)
    walk_all(p, walk)
    n = HEADER + len(walk.sites)
    start = (" __global uint *cltui_t = cltui_trace; uint *cltui_s = 0;" if dense else
             " __global uint *cltui_t = cltui_slot(cltui_trace);"
             f" uint cltui_s[{n}]; for (uint k = 0; k < {n}u; ++k) cltui_s[k] = 0u; "
             + " ".join(base(k, b.name) for k, b in enumerate(walk.bases)
                        if b.param is not None))  # fmt: skip
    pre = DENSE if dense else prelude(items, len(walk.sites))
    return Instrumented(finish(p, walk.edits, start, pre), walk.sites, items, walk.skipped,
                        walk.dense, walk.bases)  # fmt: skip
