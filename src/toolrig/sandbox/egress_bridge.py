"""Inside a command's network namespace: the way to the egress proxy. Standard library only, no toolrig import.

Trust model: this runs beside hostile commands, so it carries no authority: everything it makes only leads to
the egress proxy (``toolrig.sandbox.egress``), which decides every destination. A command that kills it,
replaces it or talks to the proxy's socket directly reaches nothing more than through it.

Run as ``python3 -I -S egress_bridge.py MODE ...`` (quick: no site, no toolrig), or import the functions:

- ``hold CONTROL_FD`` (a session's namespace, the cheap path): the holder process of a persistent network
  namespace. It sends its namespace (``/proc/self/ns/net``) once, then answers each ``L`` with fresh listening
  sockets on 127.0.0.1 and ::1 (one port) that toolrig hands to ``Egress.adopt``: per command, one round trip
  and no process in the namespace. Ends when the control socket closes. ``toolrig.sandbox.netns`` drives it.
- ``exec [--socks] [--host-loopback] SOCKET -- COMMAND...`` (a namespace per command; SOCKET may be ``fd:N``, a
  connection to the proxy toolrig made, where a seccomp filter refuses unix sockets): make the listeners,
  hand them to the proxy through its unix socket (``hand_off``), put ``proxy_env(port, ...)`` into the
  environment and exec the command: nothing stays running, the proxy accepts the command's connections itself.
- ``SOCKET PORT`` (or ``forward SOCKET PORT``): listen on 127.0.0.1:PORT (and ::1) and copy each connection to
  the unix socket: for a backend that cannot pass descriptors (a VM, a remote sandbox).

``proxy_env(port)`` is the environment a command gets: the variables curl, wget, pip, git, npm, Go and Python's
urllib read (curl reads only the lower-case ``http_proxy``; wget only lower-case ones; Node's own fetch only
with ``NODE_USE_ENV_PROXY=1``), and ``NO_PROXY`` for the namespace's own loopback, where a dev server lives;
``ALL_PROXY`` (SOCKS5 on the same port) only when asked.
"""

from __future__ import annotations

# Only built-in modules: ``socket`` (enum, selectors) and ``os`` (posixpath, stat, abc...) were most of this
# script's start-up, which every command in a namespace of its own pays (measured: 103 ms -> 58 ms under load).
import _socket
import posix
import sys

TYPE_CHECKING = False  # typing's own costs an import at every command's start
if TYPE_CHECKING:
    import socket
    import threading

HANDOFF = b"TOOLRIG-EGRESS-LISTEN\n"  # must match toolrig.sandbox.egress.HANDOFF
_BACKLOG = 128
_CHUNK = 64 * 1024
Socket = _socket.socket


def make_listeners(port: int = 0) -> list[Socket]:
    """Listening sockets on 127.0.0.1:PORT and, where the namespace has IPv6, on [::1] at the same port."""
    v4 = Socket(_socket.AF_INET, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        v4.bind(("127.0.0.1", port))
        v4.listen(_BACKLOG)
    except OSError:
        v4.close()
        raise
    listeners = [v4]
    v6 = Socket(_socket.AF_INET6, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        v6.setsockopt(_socket.IPPROTO_IPV6, _socket.IPV6_V6ONLY, 1)
        v6.bind(("::1", v4.getsockname()[1]))
        v6.listen(_BACKLOG)
        listeners.append(v6)
    except OSError:  # no IPv6 in this namespace, or the port is taken there: IPv4 alone still works
        v6.close()
    return listeners


def port_of(listeners: list[Socket]) -> int:
    return int(listeners[0].getsockname()[1])


def send_fds(sock: Socket, data: bytes, fds: list[int]) -> None:
    """``socket.send_fds`` without importing ``socket``: the descriptors as a C int array."""
    rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
    sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])


def hand_off(socket_path: str, port: int = 0, timeout: float = 10.0) -> int:
    """Give the proxy listening sockets in this namespace; returns their port. Our copies are closed."""
    listeners = make_listeners(port)
    given = socket_path.startswith("fd:") and socket_path[3:].isdigit()  # a connection toolrig made (seccomp)
    conn = (
        Socket(fileno=int(socket_path[3:]))
        if given
        else Socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    )
    try:
        conn.settimeout(timeout)
        if not given:
            conn.connect(socket_path)
        send_fds(conn, HANDOFF, [sock.fileno() for sock in listeners])
        reply = conn.recv(16)
        if reply != b"OK\n":
            raise OSError(f"the egress proxy did not take the listening sockets ({reply!r})")
        return port_of(listeners)
    finally:
        conn.close()
        for sock in listeners:
            sock.close()


def proxy_env(
    port: int, *, socks: bool = False, host_loopback: bool = False, credential: str | None = None
) -> dict[str, str]:
    """What a command's environment gets so that its tools send their traffic to the proxy on ``port``.

    ``socks`` adds ``ALL_PROXY=socks5h://...`` (the proxy speaks SOCKS5 on the same port). Off by default:
    httpx builds a SOCKS transport for ``ALL_PROXY`` when a client is made and fails without ``socksio``,
    which would break httpx programs (the model SDKs among them) that would have used ``HTTPS_PROXY``.
    ``host_loopback`` (for a policy with ``allow_loopback``) leaves loopback out of ``NO_PROXY``: HTTP clients
    then reach the *host's* 127.0.0.1 through the proxy, and no longer the namespace's own (a dev server).
    ``credential`` (a namespace shared by a session's commands) goes into the URLs as ``toolrig:<credential>@``:
    the proxy on this port serves only the command that holds it.
    """
    login = "" if credential is None else f"toolrig:{credential}@"
    url = f"http://{login}127.0.0.1:{port}"
    env = dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), url)
    env.update(npm_config_proxy=url, npm_config_https_proxy=url, NODE_USE_ENV_PROXY="1")
    env["NO_PROXY"] = env["no_proxy"] = "" if host_loopback else "localhost,127.0.0.1,::1"
    if socks:
        env["ALL_PROXY"] = env["all_proxy"] = f"socks5h://{login}127.0.0.1:{port}"
    return env


# ------------------------------------------------------------------------------------------ the holder


def hold(control: Socket) -> None:
    """Serve a session's namespace over ``control`` (SOCK_SEQPACKET) until toolrig closes it."""
    netns = posix.open("/proc/self/ns/net", posix.O_RDONLY | posix.O_CLOEXEC)
    try:
        send_fds(control, b"N", [netns])
    finally:
        posix.close(netns)
    while True:
        request = control.recv(16)
        if not request:
            return
        if request != b"L":
            control.send(b"E unknown request")
            continue
        try:
            listeners = make_listeners(0)
        except OSError as exc:
            control.send(f"E {exc}".encode())
            continue
        try:
            send_fds(control, f"P {port_of(listeners)}".encode(), [s.fileno() for s in listeners])
        finally:
            for sock in listeners:
                sock.close()


# ------------------------------------------------------------------------------------------ forwarding


def forward(socket_path: str, port: int, ready: threading.Event | None = None) -> None:
    """Copy every connection to 127.0.0.1:PORT (and ::1) to the proxy's unix socket, one thread each; forever."""
    import selectors
    import socket
    import threading

    listeners = [socket.socket(fileno=sock.detach()) for sock in make_listeners(port)]
    selector = selectors.DefaultSelector()
    for sock in listeners:
        selector.register(sock, selectors.EVENT_READ, sock)
    if ready is not None:
        ready.set()
    while True:
        for key, _ in selector.select():
            listener: socket.socket = key.data
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=_pipe, args=(client, socket_path), daemon=True).start()


def _pipe(client: socket.socket, socket_path: str) -> None:
    import selectors
    import socket

    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    with client, upstream, selectors.DefaultSelector() as selector:
        peers = {client: upstream, upstream: client}
        for sock in peers:
            selector.register(sock, selectors.EVENT_READ, sock)
        open_ends = 2
        while open_ends:
            for key, _ in selector.select():
                source: socket.socket = key.data
                try:
                    data = source.recv(_CHUNK)
                    if data:
                        peers[source].sendall(data)
                        continue
                    peers[source].shutdown(socket.SHUT_WR)
                except OSError:
                    return
                selector.unregister(source)
                open_ends -= 1


# ------------------------------------------------------------------------------------------ entry point


def execvpe(file: str, args: list[str], env: dict[bytes, bytes]) -> None:
    """``os.execvpe`` without ``os``: search PATH (from ``env``) as it does, and raise the telling error."""
    if "/" in file:
        posix.execve(file, args, env)  # the command, as the sandbox built it, replaces this process
    failure: OSError = FileNotFoundError(2, "No such file or directory", file)
    for directory in env.get(b"PATH", b"/usr/local/bin:/usr/bin:/bin").decode(errors="surrogateescape").split(":"):
        try:
            posix.execve(f"{directory or '.'}/{file}", args, env)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:  # not executable there: remembered, the search goes on (as execvp does)
            failure = exc
    raise failure


def run(socket_path: str, command: list[str], *, socks: bool, host_loopback: bool) -> int:
    """Hand listeners to the proxy, then become ``command`` with the proxy variables; returns only on failure."""
    port = hand_off(socket_path)
    env = dict(posix.environ)
    variables = proxy_env(port, socks=socks, host_loopback=host_loopback)
    env.update((name.encode(), value.encode()) for name, value in variables.items())
    try:
        execvpe(command[0], command, env)
    except OSError as exc:
        print(f"egress_bridge: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    return 126  # execvpe returns only by raising


def main(argv: list[str]) -> int:
    usage = "usage: egress_bridge.py hold FD | exec [--socks] [--host-loopback] SOCKET -- COMMAND..."
    usage += " | [forward] SOCKET PORT"
    if argv[:1] == ["hold"] and len(argv) == 2 and argv[1].isdigit():
        hold(Socket(fileno=int(argv[1])))
        return 0
    if argv[:1] == ["exec"]:
        rest, flags = argv[1:], set()
        while rest and rest[0] in ("--socks", "--host-loopback"):
            flags.add(rest.pop(0))
        if len(rest) >= 3 and rest[1] == "--":
            return run(rest[0], rest[2:], socks="--socks" in flags, host_loopback="--host-loopback" in flags)
    if argv[:1] == ["forward"]:
        argv = argv[1:]
    if len(argv) == 2 and argv[1].isdigit():
        forward(argv[0], int(argv[1]))
        return 0
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
