"""Transport templates and host names as an attacker writes them: a value with backticks,
``$()`` or ``;`` put in a template runs nothing; a host, user or workdir that looks like an
option is refused with the inventory's file:line, before anything runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cltui.fleet.inventory import Host, InventoryError, read_inventory
from cltui.fleet.names import fill
from cltui.fleet.transport import Transport

INJECTIONS = ["`touch {m}`", "$(touch {m})", "x; touch {m}", "x' ; touch {m}; '",
              'x" ; touch {m}; "', "x\ntouch {m}"]


def _mark(tmp_path: Path) -> Path:
    return tmp_path / "MARK"


@pytest.mark.child
@pytest.mark.parametrize("value", INJECTIONS)
def test_a_value_in_a_larger_word_of_a_template_runs_nothing(tmp_path: Path, value: str) -> None:
    mark = _mark(tmp_path)
    evil = value.format(m=mark)
    # the placeholder inside the script that sh -c runs: quoted there, so it is only echoed
    template = "sh -c 'echo connecting {host} >&2; exec sh -c \"$1\"' _ {cmd}"
    t = Transport(Host(name="h", address=evil, transport=template), tmp_path)
    res = t.run("echo ran", timeout=30)
    assert res.rc == 0 and res.out == b"ran\n", res
    assert res.err.strip() == f"connecting {evil}".strip() or "\n" in evil
    assert not mark.exists()


@pytest.mark.child
@pytest.mark.parametrize("quote", ["'", '"'])
@pytest.mark.parametrize("value", INJECTIONS)
def test_a_value_inside_quotes_of_a_template_is_refused(tmp_path: Path, value: str,
                                                        quote: str) -> None:
    mark = _mark(tmp_path)
    if quote == "'":  # the script in double quotes, the host in single quotes inside it
        template = "sh -c \"echo 'connecting {host}' >&2; exec sh -c \\\"$1\\\"\" _ {cmd}"
    else:
        template = "sh -c 'echo \"connecting {host}\" >&2; exec sh -c \"$1\"' _ {cmd}"
    with pytest.raises(ValueError, match="outside the quotes"):
        Transport(Host(name="h", address=value.format(m=mark), transport=template), tmp_path)
    assert not mark.exists()
    # a plain host name inside the same quotes is fine (it needs no quoting)
    t = Transport(Host(name="h", address="node-1.lab", transport=template), tmp_path)
    res = t.run("true", timeout=30)
    assert res.rc == 0 and res.err.strip() == "connecting node-1.lab"


@pytest.mark.parametrize("value", [*INJECTIONS, "-oProxyCommand=touch {m}"])
def test_a_whole_word_placeholder_takes_only_a_plain_name(tmp_path: Path, value: str) -> None:
    mark = _mark(tmp_path)
    for template in ("ssh {host}", "sh -c {host}", "env H={host} sh -c {cmd}"):
        if template.startswith("env"):
            argv = Transport(Host(name="h", address=value.format(m=mark), transport=template),
                             tmp_path).argv("true")
            assert argv[1].startswith("H='")  # quoted in a larger word (env does not care)
            continue
        with pytest.raises(ValueError):
            Transport(Host(name="h", address=value.format(m=mark), transport=template), tmp_path)
    assert not mark.exists()


def test_ssh_gets_a_double_dash_before_the_destination(tmp_path: Path) -> None:
    argv = Transport(Host(name="h", address="node1", user="u"), tmp_path).argv("true")
    assert argv[-3:-1] == ["--", "node1"]
    jump = Transport(Host(name="h", address="n", transport="ssh -J bastion {user}@{host}",
                          user="me"), tmp_path).argv("true")
    assert jump[-3:-1] == ["--", "me@n"] and jump[-5:-3] == ["-J", "bastion"]
    mine = Transport(Host(name="h", address="n", transport="ssh {host} -t"), tmp_path).argv(None)
    assert "--" not in mine  # options after the destination: the template's own order kept


def test_fill_quotes_per_position() -> None:
    v = {"host": "a b", "name": "n", "port": "", "user": ""}
    assert fill("x{host}y", v) == "x'a b'y"
    assert fill("{{literal}}-{name}", v) == "{literal}-n"
    assert fill("{user}@{name}", v) == "@n"
    with pytest.raises(ValueError, match="unknown placeholder"):
        fill("{nope}", v)
    with pytest.raises(ValueError, match="word of its own"):
        fill("run {cmd}", v)


@pytest.mark.child
@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("a 'ansible_host=-oProxyCommand=touch {m}'", "ansible_host"),
        ("a ansible_host='`touch {m}`'", "ansible_host"),
        ("a ansible_host='$(touch {m})'", "ansible_host"),
        ("a ansible_user=-oProxyCommand=x", "ansible_user"),
        ("a ansible_user='u;touch {m}'", "ansible_user"),
        ("-o.evil", "host"),
        ("a cltui_workdir=-rf", "cltui_workdir"),
    ],
)
def test_an_option_like_or_odd_host_is_refused_with_file_and_line(
    tmp_path: Path, line: str, key: str
) -> None:
    mark = _mark(tmp_path)
    inv = tmp_path / "hosts.ini"
    inv.write_text(f"# lab\n[g]\n{line.format(m=mark)}\n")
    with pytest.raises(InventoryError) as exc:
        read_inventory(inv)
    msg = str(exc.value)
    assert msg.startswith(f"{inv}:3: {key} ") and msg.endswith(": refused") and "\n" not in msg
    proc = subprocess.run([sys.executable, "-m", "cltui", "fleet", str(tmp_path), "--hosts",
                           str(inv)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"cltui: {msg}"
    assert not mark.exists()


def test_a_group_variable_is_refused_at_its_own_line(tmp_path: Path) -> None:
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    a:\n  vars:\n    ansible_user: '-x'\n")
    with pytest.raises(InventoryError, match=rf"^{inv}:5: ansible_user '-x' starts with '-'"):
        read_inventory(inv)
