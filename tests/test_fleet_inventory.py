"""The fleet's inventory reader (Ansible INI and YAML, plain lines), its transport command
lines and its failure words; bad inventories are one line naming file:line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cltui.fleet.inventory import DEFAULT_WORKDIR, InventoryError, read_inventory
from cltui.fleet.transport import Transport, classify_failure

INI = """\
# a comment
plain1
bob@plain2:2201

[gpu]
g1 ansible_host=10.0.0.1 ansible_port=2222 cltui_devices=pocl
node[01:03] cltui_runner=cpp ansible_ssh_private_key_file=~/.ssh/lab

[gpu:vars]
cltui_env="OCL_ICD_VENDORS=/etc/vendors-gpu A=b"
ansible_user=alice

[lab:children]
gpu

[lab:vars]
ansible_user=carol
ansible_ssh_common_args='-o ProxyJump=bastion -F /x/cfg'

[all:vars]
cltui_workdir=/scratch/cltui
"""

YAML = """\
all:
  vars:
    cltui_workdir: /scratch/y
    ansible_python_interpreter: /usr/bin/python3
  hosts:
    a:
      ansible_port: 2201
      cltui_env: {OCL_ICD_VENDORS: /v}
  children:
    gpu:
      vars: {cltui_runner: cpp, ansible_python_interpreter: /opt/py/bin/python}
      hosts:
        b:
        c: {cltui_devices: [pocl, "1:0"], cltui_transport: "kubectl exec {host} --"}
"""


def _inv(tmp_path: Path, text: str, name: str = "hosts") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_ini_groups_children_and_variables_resolve_as_ansible_does(tmp_path: Path) -> None:
    hosts = {h.name: h for h in read_inventory(_inv(tmp_path, INI))}
    assert list(hosts) == ["plain1", "plain2", "g1", "node01", "node02", "node03"]
    assert hosts["plain2"].user == "bob" and hosts["plain2"].port == 2201
    assert hosts["plain1"].workdir == "/scratch/cltui" and hosts["plain1"].user is None
    g1 = hosts["g1"]
    assert (g1.address, g1.port, g1.devices) == ("10.0.0.1", 2222, ("pocl",))
    assert g1.user == "alice"  # the child group's vars win over its parent's
    assert g1.env == (("OCL_ICD_VENDORS", "/etc/vendors-gpu"), ("A", "b"))
    assert g1.ssh_args == ("-o", "ProxyJump=bastion", "-F", "/x/cfg")
    assert g1.groups == ("lab", "gpu") and g1.runner is None
    assert hosts["node02"].runner == "cpp" and hosts["node02"].key == "~/.ssh/lab"


def test_yaml_and_plain_inventories(tmp_path: Path) -> None:
    hosts = {h.name: h for h in read_inventory(_inv(tmp_path, YAML, "hosts.yml"))}
    assert hosts["a"].port == 2201 and hosts["a"].env == (("OCL_ICD_VENDORS", "/v"),)
    assert hosts["a"].python == "/usr/bin/python3" and hosts["b"].python == "/opt/py/bin/python"
    assert hosts["b"].runner == "cpp" and hosts["c"].devices == ("pocl", "1:0")
    assert hosts["c"].transport == "kubectl exec {host} --"
    plain = read_inventory(_inv(tmp_path, "# lab\nroot@gpu1:22\ngpu2\n", "list.txt"))
    assert [(h.name, h.user, h.port, h.workdir) for h in plain] == [
        ("gpu1", "root", 22, DEFAULT_WORKDIR), ("gpu2", None, None, DEFAULT_WORKDIR)]


@pytest.mark.parametrize(
    ("name", "text", "where", "what"),
    [
        ("h.ini", "[gpu\nx\n", ":1:", "not [user@]host[:port]"),
        ("h.ini", "[gpu:bogus]\nx\n", ":1:", "bad section"),
        ("h.ini", "a ansible_port=99999\n", ":1:", "is not a port"),
        ("h.ini", "a\n[all:vars]\ncltui_runner=rust\n", ":3:", "not python or cpp"),
        ("h.yml", "all:\n  vars:\n    cltui_runner: rust\n  hosts: {a: }\n", ":3:", "python or"),
        ("h.ini", "[g]\na cltui_env=NOPE\n", ":2:", "KEY=VALUE"),
        ("h.ini", "[g]\na 'unclosed\n", ":2:", "quotation"),
        ("h.yml", "all:\n  hosts:\n    a: [1, 2\n", ":3:", "not valid YAML"),
        ("h.yml", "all:\n  hosts:\n    a:\n  wrong: 1\n", ":4:", "unknown key 'wrong'"),
        ("h.yml", "all:\n  hosts: [a, b]\n", ":2:", "must be a mapping"),
        ("h.ini", "# nothing\n", ":1:", "names no host"),
    ],
)
def test_a_bad_inventory_is_one_line_naming_file_and_line(
    tmp_path: Path, name: str, text: str, where: str, what: str
) -> None:
    p = _inv(tmp_path, text, name)
    with pytest.raises(InventoryError) as exc:
        read_inventory(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}{where}") and what in msg and "\n" not in msg


@pytest.mark.child
def test_the_cli_says_a_bad_inventory_in_one_line(tmp_path: Path) -> None:
    p = _inv(tmp_path, "[g]\na ansible_port=x\n")
    proc = subprocess.run([sys.executable, "-m", "cltui", "fleet", str(tmp_path), "--hosts",
                           str(p)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"cltui: {p}:2: ansible_port 'x' is not a port"


@pytest.mark.child
def test_a_folder_that_is_no_bundle_is_one_line(tmp_path: Path) -> None:
    inv = _inv(tmp_path, "a\n")
    proc = subprocess.run([sys.executable, "-m", "cltui", "fleet", str(tmp_path), "--hosts",
                           str(inv)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (f"cltui: {tmp_path} is not a bundle folder (no "
                                   "manifest.json): give BUNDLE, or DUMPDIR RANGE")


def test_transport_command_lines(tmp_path: Path) -> None:
    (h,) = read_inventory(_inv(tmp_path, "a ansible_host=10.1.1.1 ansible_port=2200 "
                                         "ansible_user=u ansible_ssh_private_key_file=/k "
                                         "ansible_ssh_common_args='-F /cfg'\n"))
    argv = Transport(h, tmp_path).argv("echo 'hi'")
    assert argv[0] == "ssh" and argv[-2:] == ["10.1.1.1", "sh -c 'echo '\"'\"'hi'\"'\"''"]
    opts = " ".join(argv)
    for want in ("BatchMode=yes", "ControlMaster=no", f"ControlPath={tmp_path}/",
                 "ControlPersist=", "-p 2200", "-l u", "-i /k", "-F /cfg"):
        assert want in opts
    # one machine listed twice (same address, port, user): one ControlPath each, so that
    # each has its own master, which its run stops (a shared %C socket left one running)
    twice = read_inventory(_inv(tmp_path, "a ansible_host=10.1.1.1 cltui_env='X=1'\n"
                                          "b ansible_host=10.1.1.1 cltui_env='X=2'\n"))
    paths = {next(w for w in Transport(t, tmp_path).argv("true") if w.startswith("ControlPath="))
             for t in twice}  # fmt: skip
    assert len(paths) == 2 and all(len(p) < len(f"ControlPath={tmp_path}/") + 20 for p in paths)
    (k,) = read_inventory(_inv(tmp_path, "pod cltui_transport='kubectl exec {host} --'\n"))
    assert Transport(k, tmp_path).argv("true") == ["kubectl", "exec", "pod", "--", "sh", "-c",
                                                   "true"]
    (s,) = read_inventory(_inv(tmp_path, "n1 cltui_transport='env H={host} sh -c {cmd}'\n"))
    assert Transport(s, tmp_path).argv("echo x") == ["env", "H=n1", "sh", "-c", "echo x"]


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("ssh: connect to host h port 22: Connection refused", "unreachable"),
        ("ssh: Could not resolve hostname nowhere: Name or service not known", "unreachable"),
        ("u@h: Permission denied (publickey).", "authentication"),
        ("Host key verification failed.", "authentication"),
        ("kex_exchange_identification: something odd", "transport"),
    ],
)
def test_ssh_failures_are_named(text: str, status: str) -> None:
    assert classify_failure(text)[0] == status


def test_the_readme_example_inventory_reads(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    ini = readme.split("# lab.ini\n", 1)[1].split("```", 1)[0]
    hosts = {h.name: h for h in read_inventory(_inv(tmp_path, ini, "lab.ini"))}
    assert sorted(hosts) == ["arc", "ci-runner-1", "ci-runner-2", "ci-runner-3", "farm-cpu",
                             "gpu-box", "pod-a"]
    assert hosts["pod-a"].transport == "kubectl exec {host} --"
    assert hosts["farm-cpu"].env == (("OCL_ICD_VENDORS", "/opt/pocl/vendors"),)
    assert all(h.ssh_args == ("-o", "ProxyJump=bastion") for h in hosts.values())


def test_ini_lines_split_as_a_shell_does_in_one_pass(tmp_path: Path) -> None:
    """The INI splitter agrees with shlex on the lines inventories hold (quotes joined and
    removed, # a comment) and reads a 1 MB line of one repeated byte (shlex was quadratic)."""
    import shlex

    from cltui.fleet.inventory import _split

    for line in ['h1 ansible_port=22 cltui_env="A=1 B=2"', "pod t='kubectl exec {host} --'  # c",
                 "a#b c", 'x="a""b" y', "  host  ", "n[01:03] u='q'"]:  # fmt: skip
        assert _split(line, "w") == shlex.split(line, comments=True), line
    with pytest.raises(InventoryError, match="No closing quotation"):
        _split('h x="open', "w")
    for byte in "a/[=@":
        path = tmp_path / "inv.ini"
        path.write_text(byte * 1_000_000)
        try:  # one host of a long name ('a'), or one line saying what is wrong
            hosts = read_inventory(path)
            assert byte == "a" and len(hosts) == 1
        except InventoryError as exc:
            assert len(str(exc)) < 300
