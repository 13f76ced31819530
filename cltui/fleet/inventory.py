"""Reading a host inventory: Ansible INI, Ansible YAML, or plain ``[user@]host[:port]`` lines.

Groups, ``children`` and per-group and per-host variables follow Ansible (a host's own
variables win over its groups', a child group's over its parent's, ``all`` weakest); the
connection variables mean what they mean for Ansible (``ansible_host``, ``ansible_port``,
``ansible_user``, ``ansible_ssh_private_key_file``, ``ansible_ssh_common_args``,
``ansible_python_interpreter``); cltui's own are ``cltui_runner`` (python, cpp),
``cltui_devices`` (a device filter: P:D or a name substring, a list for several),
``cltui_env`` (``KEY=VAL`` words or a mapping), ``cltui_workdir`` (the host's cache folder,
default ``~/.cache/cltui-fleet``) and ``cltui_transport`` (a command template, ``ssh {host}``
by default); ``cltui_slurm_KEY`` makes the host a Slurm kind (:mod:`cltui.fleet.slurm`).
A bad inventory raises :class:`InventoryError` naming ``file:line``; so does a host,
user or workdir that looks like an option or holds what no host or user name may
(:mod:`cltui.fleet.names`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cltui.capture.safeopen import MAX_INVENTORY, read_text_limited
from cltui.errors import CltuiError
from cltui.fleet.names import bad_host, bad_user, bad_workdir
from cltui.fleet.slurm import spec as slurm_spec

__all__ = ["DEFAULT_WORKDIR", "Host", "InventoryError", "read_inventory"]

DEFAULT_WORKDIR = "~/.cache/cltui-fleet"
RUNNERS = ("python", "cpp")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HOST = re.compile(r"(?:(?P<user>[^@\s]+)@)?(?P<host>[A-Za-z0-9_.\-\[\]:]+?)(?::(?P<port>\d+))?\Z")
_RANGE = re.compile(r"\[(\d+):(\d+)\]")


def _q(text: object) -> str:
    """``text`` quoted for an error line, cut to 60 characters (an inventory line may be huge)."""
    shown = str(text)
    return repr(shown if len(shown) <= 60 else shown[:60] + "...")


class InventoryError(CltuiError):
    """An inventory that cannot be read: one line, ``file:line: what``."""


@dataclass(frozen=True)
class Host:
    """One host of the inventory, its variables resolved."""

    name: str  # as the inventory names it
    address: str  # ansible_host, else the name
    port: int | None = None
    user: str | None = None
    key: str | None = None
    ssh_args: tuple[str, ...] = ()
    python: str = "python3"
    runner: str | None = None
    devices: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    workdir: str = DEFAULT_WORKDIR
    transport: str | None = None
    groups: tuple[str, ...] = ()
    where: str = ""  # file:line of its first mention
    tolerance: tuple[tuple[str, float], ...] = ()  # cltui_ulp/atol/rtol (cltui.fleet.hostvars)
    device_tolerances: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    slurm: tuple[tuple[str, str], ...] = ()  # cltui_slurm_KEY: a Slurm kind (fleet/slurm)


@dataclass
class _Group:
    vars: dict[str, Any] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)


@dataclass
class _Inv:
    path: Path
    groups: dict[str, _Group] = field(default_factory=dict)
    host_vars: dict[str, dict[str, Any]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)  # host -> file:line
    var_where: dict[tuple[str, str], str] = field(default_factory=dict)  # (host, key)
    group_var_where: dict[tuple[str, str], str] = field(default_factory=dict)  # (group, key)

    def group(self, name: str) -> _Group:
        return self.groups.setdefault(name, _Group())

    def add_host(self, group: str, name: str, hvars: Mapping[str, Any], line: int) -> None:
        g = self.group(group)
        if name not in g.hosts:
            g.hosts.append(name)
        self.where.setdefault(name, f"{self.path}:{line}")
        mine = self.host_vars.setdefault(name, {})
        for k, v in hvars.items():
            mine[k] = v
            self.var_where[(name, k)] = f"{self.path}:{line}"


def read_inventory(path: str | Path) -> list[Host]:
    """Every host of the inventory at ``path``, in the order it first names them."""
    p = Path(path)
    try:
        text = read_text_limited(p, MAX_INVENTORY, follow=True)  # never a FIFO, bounded
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InventoryError(f"{p}: cannot read the inventory: {why}") from None
    inv = _Inv(p)
    if _is_yaml(p, text):
        _parse_yaml(inv, text)
    else:
        _parse_ini(inv, text)
    _var_folders(inv)
    hosts = [_resolve(inv, name) for name in inv.where]
    if not hosts:
        raise InventoryError(f"{p}:1: the inventory names no host")
    return hosts


def _var_folders(inv: _Inv) -> None:
    """``group_vars/`` and ``host_vars/`` beside the inventory: over the file's own."""
    from cltui.fleet.hostvars import var_folders

    groups, hosts = var_folders(inv.path, list(inv.groups), list(inv.where), InventoryError)
    for g, found in groups.items():
        for k, (v, f) in found.items():
            inv.group(g).vars[k] = v
            inv.group_var_where[(g, k)] = f
    for h, found in hosts.items():
        for k, (v, f) in found.items():
            inv.host_vars.setdefault(h, {})[k] = v
            inv.var_where[(h, k)] = f


def _is_yaml(p: Path, text: str) -> bool:
    if p.suffix.lower() in (".yml", ".yaml"):
        return True
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        return line == "---" or bool(re.fullmatch(r"[A-Za-z0-9_.\-]+:\s*(#.*)?", line))
    return False


def _parse_ini(inv: _Inv, text: str) -> None:
    """Ansible's INI form; a file without sections is a list of ``[user@]host[:port]``."""
    section, kind = "ungrouped", "hosts"
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        where = f"{inv.path}:{n}"
        if line.startswith("[") and line.endswith("]"):
            name, _, kind = line[1:-1].strip().partition(":")
            kind = kind or "hosts"
            if not name or kind not in ("hosts", "vars", "children"):
                raise InventoryError(f"{where}: bad section {_q(line)} (want [group], "
                                     "[group:vars] or [group:children])")
            section = name
            inv.group(section)
            continue
        words = _split(line, where)
        if kind == "children":
            if len(words) != 1:
                raise InventoryError(f"{where}: a [{section}:children] line names one group")
            inv.group(section).children.append(words[0])
            inv.group(words[0])
        elif kind == "vars":
            key, value = _assignment(line, where)
            inv.group(section).vars[key] = value
            inv.group_var_where[(section, key)] = where
        else:
            hvars = dict(_assignment(w, where) for w in words[1:])
            for name, more in _expand(words[0], where):
                inv.add_host(section, name, {**more, **hvars}, n)


_WORD = re.compile(r"""(?:[^\s'"#]+|"[^"]*"|'[^']*')+""")
_QUOTED = re.compile(r""""([^"]*)"|'([^']*)'""")
_SPACE = re.compile(r"\s*")


def _unquote(m: re.Match[str]) -> str:
    return m.group(1) if m.group(1) is not None else m.group(2)


def _split(line: str, where: str) -> list[str]:
    """The words of an INI line as a shell splits them (quotes joined and removed, ``#``
    starts a comment), in one pass: linear in the line, however it is made (``shlex`` took
    quadratic time on a long word)."""
    words: list[str] = []
    i, n = 0, len(line)
    while True:
        i = _SPACE.match(line, i).end()  # type: ignore[union-attr]  # \s* always matches
        if i >= n or line[i] == "#":
            return words
        m = _WORD.match(line, i)
        if m is None:
            raise InventoryError(f"{where}: No closing quotation")
        words.append(_QUOTED.sub(_unquote, m.group()))
        i = m.end()
        if i < n and line[i] == "#":
            return words


def _assignment(word: str, where: str) -> tuple[str, str]:
    key, eq, value = word.partition("=")
    key = key.strip()
    if not eq or not key:
        raise InventoryError(f"{where}: expected KEY=VALUE, got {_q(word)}")
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return key, value


def _expand(word: str, where: str) -> list[tuple[str, dict[str, Any]]]:
    """``[user@]host[:port]``, with Ansible's numeric ranges (``node[01:03]``)."""
    m = _RANGE.search(word)
    if m:
        lo, hi = m.group(1), m.group(2)
        if int(lo) > int(hi):
            raise InventoryError(f"{where}: empty host range {m.group(0)!r}")
        width = len(lo) if lo.startswith("0") else 0
        names = [word[: m.start()] + str(i).zfill(width) + word[m.end():]
                 for i in range(int(lo), int(hi) + 1)]
        return [pair for name in names for pair in _expand(name, where)]
    hm = _HOST.match(word)
    if hm is None or "[" in word or "]" in word:
        raise InventoryError(f"{where}: {_q(word)} is not [user@]host[:port]")
    more: dict[str, Any] = {}
    if hm.group("user"):
        more["ansible_user"] = hm.group("user")
    if hm.group("port"):
        more["ansible_port"] = hm.group("port")
    return [(hm.group("host"), more)]


def _group_order(inv: _Inv, host: str) -> list[str]:
    """The groups holding ``host``, weakest first: ``all``, then by depth below it."""
    depth: dict[str, int] = {}
    parents: dict[str, list[str]] = {}
    for g, grp in inv.groups.items():
        for c in grp.children:
            parents.setdefault(c, []).append(g)

    def depth_of(g: str, seen: frozenset[str] = frozenset()) -> int:
        if g in depth:
            return depth[g]
        ups = [p for p in parents.get(g, []) if p not in seen]
        depth[g] = 1 + max((depth_of(p, seen | {g}) for p in ups), default=0)
        return depth[g]

    mine: set[str] = set()
    todo = [g for g, grp in inv.groups.items() if host in grp.hosts]
    while todo:
        g = todo.pop()
        if g not in mine:
            mine.add(g)
            todo.extend(parents.get(g, []))
    mine.discard("all")
    return ["all", *sorted(mine, key=lambda g: (depth_of(g), g))]


def _resolve(inv: _Inv, name: str) -> Host:
    groups = _group_order(inv, name)
    merged: dict[str, Any] = {}
    wheres: dict[str, str] = {}
    for g in groups:
        for key, value in inv.groups.get(g, _Group()).vars.items():
            merged[key] = value
            wheres[key] = inv.group_var_where.get((g, key), inv.where[name])
    merged.update(inv.host_vars.get(name, {}))

    def where(key: str) -> str:
        return inv.var_where.get((name, key), wheres.get(key, inv.where[name]))

    address = str(merged.get("ansible_host") or merged.get("ansible_ssh_host") or name)
    user = _opt_str(merged.get("ansible_user") or merged.get("ansible_ssh_user"))
    workdir = str(merged.get("cltui_workdir") or DEFAULT_WORKDIR)
    for key, value, why in (
        ("host", name, bad_host(name)),
        ("ansible_host", address, bad_host(address)),
        ("ansible_user", user, user and bad_user(user)),
        ("cltui_workdir", workdir, bad_workdir(workdir)),
    ):
        if why:
            at = inv.where[name] if key == "host" else where(
                key if key in merged else {"ansible_host": "ansible_ssh_host",
                                           "ansible_user": "ansible_ssh_user"}.get(key, key))
            raise InventoryError(f"{at}: {key} {_q(value)} {why}: refused")
    from cltui.fleet.hostvars import host_tolerances

    tolerance, per_device = host_tolerances(merged, where, InventoryError)
    return Host(
        name=name,
        address=address,
        port=_port(merged, where),
        user=user,
        key=_opt_str(merged.get("ansible_ssh_private_key_file")),
        ssh_args=tuple(_words(merged, "ansible_ssh_common_args", where)
                       + _words(merged, "ansible_ssh_extra_args", where)),
        python=str(merged.get("ansible_python_interpreter") or "python3"),
        runner=_runner(merged.get("cltui_runner"), where("cltui_runner")),
        devices=_devices(merged.get("cltui_devices")),
        env=_env(merged.get("cltui_env"), where("cltui_env")),
        workdir=workdir,
        transport=_opt_str(merged.get("cltui_transport")),
        groups=tuple(g for g in groups if g != "all"),
        where=inv.where[name],
        tolerance=tolerance,
        device_tolerances=per_device,
        slurm=_slurm(merged, where),
    )


def _slurm(merged: Mapping[str, Any], where: Any) -> tuple[tuple[str, str], ...]:
    """The host's ``cltui_slurm_KEY`` variables (any: the host is a Slurm kind)."""
    out = []
    for key, value in sorted(merged.items()):
        if key.startswith(slurm_spec.PREFIX) and value not in (None, ""):
            why = slurm_spec.bad_option(key[len(slurm_spec.PREFIX):], str(value))
            if why:
                raise InventoryError(f"{where(key)}: {key} {_q(value)} {why}")
            out.append((key[len(slurm_spec.PREFIX):], str(value)))
    return tuple(out)


def _opt_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _port(merged: Mapping[str, Any], where: Any) -> int | None:
    raw = merged.get("ansible_port", merged.get("ansible_ssh_port"))
    if raw is None or raw == "":
        return None
    text = str(raw).strip()
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise InventoryError(f"{where('ansible_port')}: ansible_port {_q(text)} is not a port")
    return int(text)


def _words(merged: Mapping[str, Any], key: str, where: Any) -> list[str]:
    value = merged.get(key)
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return _split(str(value), where(key))


def _runner(value: Any, where: str) -> str | None:
    if value is None or value == "":
        return None
    word = {"py": "python", "c++": "cpp"}.get(str(value).strip().lower(), str(value).strip())
    if word not in RUNNERS:
        raise InventoryError(f"{where}: cltui_runner {_q(value)} is not python or cpp")
    return word


def _devices(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, list):
        return tuple(str(v) for v in value if str(v).strip())
    return (str(value),)


def _env(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, Mapping):
        pairs = [(str(k), "" if v is None else str(v)) for k, v in value.items()]
    else:
        items = value if isinstance(value, list) else _split(str(value), where)
        pairs = []
        for item in items:
            key, eq, val = str(item).partition("=")
            if not eq:
                raise InventoryError(f"{where}: cltui_env wants KEY=VALUE words, got {_q(item)}")
            pairs.append((key, val))
    for key, _v in pairs:
        if not _ENV_NAME.match(key):
            raise InventoryError(f"{where}: cltui_env: {_q(key)} is not a variable name")
    return tuple(pairs)


def _parse_yaml(inv: _Inv, text: str) -> None:
    """Ansible's YAML form: groups (``all`` at the top, usually) with ``hosts``, ``vars`` and
    ``children``; line numbers from the YAML nodes."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if getattr(exc, "context", None):
            problem = f"{exc.context}: {problem}"  # type: ignore[attr-defined]
        raise InventoryError(f"{inv.path}:{line}: not valid YAML: {problem}") from None
    finally:
        loader.dispose()
    if root is None:
        raise InventoryError(f"{inv.path}:1: the inventory is empty")
    for gname, gnode in _mapping(inv, root, "the inventory"):
        _yaml_group(inv, loader, gname, gnode)


def _line(node: Any) -> int:
    return int(node.start_mark.line) + 1


def _mapping(inv: _Inv, node: Any, what: str) -> list[tuple[str, Any]]:
    import yaml

    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return []
    if not isinstance(node, yaml.MappingNode):
        raise InventoryError(f"{inv.path}:{_line(node)}: {what} must be a mapping")
    out = []
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise InventoryError(f"{inv.path}:{_line(k)}: a key of {what} must be a name")
        out.append((str(k.value), v))
    return out


def _yaml_vars(inv: _Inv, loader: Any, node: Any, what: str) -> dict[str, tuple[Any, int]]:
    out: dict[str, tuple[Any, int]] = {}
    for key, vnode in _mapping(inv, node, what):
        out[key] = (loader.construct_object(vnode, deep=True), _line(vnode))
    return out


def _yaml_group(inv: _Inv, loader: Any, gname: str, gnode: Any, depth: int = 0) -> None:
    if depth > 64:
        raise InventoryError(f"{inv.path}:{_line(gnode)}: groups nested too deep")
    group = inv.group(gname)
    for key, node in _mapping(inv, gnode, f"group {_q(gname)}"):
        if key == "hosts":
            for hword, hnode in _mapping(inv, node, f"the hosts of {_q(gname)}"):
                hv = _yaml_vars(inv, loader, hnode, f"host {_q(hword)}")
                for name, more in _expand(hword, f"{inv.path}:{_line(hnode)}"):
                    inv.add_host(gname, name, more, _line(hnode))
                    for k, (v, line) in hv.items():
                        inv.host_vars[name][k] = v
                        inv.var_where[(name, k)] = f"{inv.path}:{line}"
        elif key == "vars":
            for k, (v, line) in _yaml_vars(inv, loader, node, f"the vars of {_q(gname)}").items():
                group.vars[k] = v
                inv.group_var_where[(gname, k)] = f"{inv.path}:{line}"
        elif key == "children":
            for cname, cnode in _mapping(inv, node, f"the children of {_q(gname)}"):
                if cname not in group.children:
                    group.children.append(cname)
                _yaml_group(inv, loader, cname, cnode, depth + 1)
        else:
            raise InventoryError(f"{inv.path}:{_line(node)}: group {_q(gname)}: unknown key "
                                 f"{_q(key)} (hosts, vars, children)")
