"""What a command's launch needs for its network, in one value: the sandbox splices it into its bubblewrap line.

Trust model: built by toolrig from its own objects (an open ``Egress``, a ``SessionNetwork``), never from
the command; every way it describes leads out only through the egress proxy, or nowhere (``offline``).

Three shapes, one per ``network`` setting of a command:

- ``joined(net, egress)``: the command joins its session's namespace (a dev server of an earlier command is
  there) and its own proxy listens on a fresh port in it, taking only the command's credential. Nothing runs
  per command but the command (and ``nsenter``, which execs bubblewrap).
- ``private(egress)``: a namespace of its own; the stdlib bridge hands listeners to the proxy and execs the
  command (one Python start).
- ``offline()``: a namespace of its own and no proxy (``network: none``).

The launch is ``[*before_bwrap, "bwrap", *bwrap_args, <the sandbox's own options>, "--", *before_command,
*command]`` with ``env`` added to the command's environment and ``pass_fds`` inherited by the first process
(their numbers appear in ``before_bwrap``; a launcher that renumbers descriptors passes ``fd_numbers``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from toolrig.sandbox.egress import Egress
from toolrig.sandbox.egress_bridge import proxy_env
from toolrig.sandbox.netns import BRIDGE, SessionNetwork


@dataclass(frozen=True, slots=True)
class CommandNetwork:
    env: dict[str, str] = field(default_factory=dict)
    before_bwrap: list[str] = field(default_factory=list)
    bwrap_args: list[str] = field(default_factory=list)
    before_command: list[str] = field(default_factory=list)
    pass_fds: tuple[int, ...] = ()


def joined(
    net: SessionNetwork,
    egress: Egress,
    *,
    socks: bool = False,
    host_loopback: bool = False,
    fd_numbers: tuple[int, ...] | None = None,
    user: tuple[int, int] | None = None,
) -> CommandNetwork:
    """Join the session's namespace; the command's proxy gets listeners there (one round trip to the holder).

    Unprivileged, joining gives the joiner every capability in bubblewrap's outer user namespace, so the command
    gets a user namespace of its own again, as ``user`` (uid, gid; default ours): none over the namespace.
    The proxy's ``credential`` goes into the command's proxy URLs: other commands of the session can find the
    port (``/proc/net/tcp`` is the namespace's), and only this one may use it.
    """
    port = net.serve(egress)
    numbers = fd_numbers if fd_numbers is not None else net.pass_fds()
    user_args = ["--cap-drop", "ALL"]  # root's bubblewrap keeps every capability unless told
    if net.user_fd is not None:
        uid, gid = user or (os.getuid(), os.getgid())
        user_args += ["--unshare-user", "--uid", str(uid), "--gid", str(gid)]
    prefix = net.join_prefix(numbers[0], numbers[1] if len(numbers) > 1 else None)
    env = proxy_env(port, socks=socks, host_loopback=host_loopback, credential=egress.credential)
    return CommandNetwork(env, prefix, user_args, [], net.pass_fds())


def private(
    egress: Egress, *, python: str = sys.executable, socks: bool = False, host_loopback: bool = False
) -> CommandNetwork:
    """A namespace of the command's own, reaching the proxy through the hand-off bridge (which sets the env).

    ``socks`` and ``host_loopback`` are ``egress_bridge.proxy_env``'s: the bridge sets the variables itself.
    """
    bind = ["--unshare-net", "--cap-drop", "ALL", "--bind", egress.directory, egress.directory]
    flags = ["--socks"] * socks + ["--host-loopback"] * host_loopback
    return CommandNetwork({}, [], bind, [python, "-I", "-S", BRIDGE, "exec", *flags, egress.socket_path, "--"])


def offline() -> CommandNetwork:
    """No network at all: a namespace with only its own loopback, and no proxy."""
    return CommandNetwork(bwrap_args=["--unshare-net", "--cap-drop", "ALL"])
