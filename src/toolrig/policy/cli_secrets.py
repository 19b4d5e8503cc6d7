"""Where common command-line programs take a password, as a table: the audit's third net (see ``redact``).

A short flag means a password only for the program that documents it (``-p`` is a port to ssh and a parent
to mkdir), so flags are looked up by program, and by subcommand where the program has several. Sources: each
program's own manual (docker login, aws configure, openssl passphrase-options, htpasswd, the MySQL, PostgreSQL,
MongoDB, Redis, LDAP, Samba, Oracle and keytool clients, zip/7z/rar, ssh-keygen, cloud CLIs).

Trust model: the text is a model's command line; nothing here runs it. A word we cannot place is kept as it
is: the other nets (token shapes, secret-looking names, ``user:pass@`` URLs) still look at it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

REDACTED = "[REDACTED]"


@dataclass(frozen=True, slots=True)
class CliSecret:
    """One program's password argument: after a flag (``-p PW``, ``-p=PW``, glued ``-pPW``) or by position."""

    programs: tuple[str, ...]
    subcommand: tuple[str, ...] = ()  # words that must follow the program (``docker login``)
    flags: tuple[str, ...] = ()  # the next word (or ``=value``) is the secret
    glued: tuple[str, ...] = ()  # the rest of the same word is the secret (``mysql -pPW``)
    after: str = ""  # only what follows this in the value is secret (``user%PW``, ``pass:PW``, ``user/PW@db``)
    last: str = ""  # the last positional word is secret when a short flag holding this letter is given ("b")
    position: int = 0  # the n-th positional word after the subcommand is secret (1-based)
    named: bool = False  # ``... set NAME VALUE``: VALUE is secret when NAME is secret-looking


_LOGIN = ("login",)
TABLE: tuple[CliSecret, ...] = (
    CliSecret(("docker", "podman", "nerdctl", "buildah", "skopeo", "oras", "crane"), _LOGIN, ("-p", "--password")),
    CliSecret(("helm",), ("registry", "login"), ("-p", "--password")),
    CliSecret(("helm",), ("repo", "add"), ("--password",)),
    CliSecret(("aws",), ("configure", "set"), named=True),
    CliSecret(("npm", "pnpm", "yarn"), ("config", "set"), named=True),
    CliSecret(("dotnet",), ("user-secrets", "set"), position=2),
    CliSecret(("gh", "glab"), ("secret", "set"), ("-b", "--body")),
    CliSecret(("openssl",), (), ("-pass", "-passin", "-passout", "-password"), after="pass:"),
    CliSecret(("openssl",), (), ("-k",)),
    CliSecret(("htpasswd",), last="b"),
    CliSecret(
        (
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlshow",
            "mysqlcheck",
            "mysqlsh",
            "mariadb",
            "mariadb-dump",
            "mariadb-admin",
        ),
        glued=("-p",),
    ),
    CliSecret(("sshpass",), (), ("-p",), glued=("-p",)),
    CliSecret(("redis-cli", "valkey-cli", "keydb-cli"), (), ("-a", "--pass")),
    CliSecret(
        ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"), (), ("-p", "--password")
    ),
    CliSecret(("sqlcmd", "bcp", "osql", "isql"), (), ("-P",)),
    CliSecret(
        ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapmodrdn", "ldappasswd", "ldapwhoami", "ldapcompare"),
        (),
        ("-w",),
        glued=("-w",),
    ),
    CliSecret(("smbclient", "rpcclient", "smbmap", "smbcacls", "net", "wbinfo"), (), ("-U", "--user"), after="%"),
    CliSecret(("smbmap", "crackmapexec", "netexec", "nxc", "evil-winrm", "xfreerdp", "rdesktop"), (), ("-p",)),
    CliSecret(("lftp",), (), ("-u",), after=","),
    CliSecret(("sqlplus", "sqlldr", "exp", "imp", "expdp", "impdp", "rman", "dgmgrl"), position=1, after="/"),
    CliSecret(("zip", "zipcloak", "unzip", "funzip"), (), ("-P", "--password")),
    CliSecret(("7z", "7za", "7zr", "rar", "unrar"), glued=("-p",)),
    CliSecret(("ssh-keygen",), (), ("-N", "-P")),
    CliSecret(
        ("keytool", "jarsigner"),
        (),
        ("-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass", "-destkeypass"),
    ),
    CliSecret(("az",), _LOGIN, ("-p", "--password")),
    CliSecret(("cf",), _LOGIN, ("-p",)),
    CliSecret(("cf",), ("auth",), position=2),
    CliSecret(("twine",), ("upload",), ("-p", "--password")),
    CliSecret(("mosquitto_pub", "mosquitto_sub", "mosquitto_rr"), (), ("-P", "--pw")),
    CliSecret(("doctl",), ("auth", "init"), ("-t", "--access-token")),
    CliSecret(("vault", "bao"), _LOGIN, position=1),
    CliSecret(("bw",), ("unlock",), position=1),
    CliSecret(("mc", "mcli"), ("alias", "set"), position=4),
    CliSecret(("rabbitmqctl",), ("add_user",), position=2),
    CliSecret(("rabbitmqctl",), ("change_password",), position=2),
    CliSecret(("wget",), (), ("--password", "--http-password", "--ftp-password", "--proxy-password")),
    CliSecret(("curl",), (), ("--pass", "--proxy-pass", "--oauth2-bearer", "--aws-sigv4-secret")),
    CliSecret(("net",), ("user",), position=2),
    CliSecret(("cmdkey",), (), ("/pass",)),
)
# What runs another command with the same arguments: ``sudo docker login -p PW`` is docker's call.
_WRAPPERS = frozenset({"sudo", "doas", "env", "command", "exec", "nohup", "time", "nice", "ionice", "stdbuf", "xargs"})
_WORD = re.compile(r"[;&|\n()`]+|(?:\"(?:[^\"\\]|\\.)*\"?|'[^']*'?|\\.|[^\s;&|()`\"'\\])+")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@cache
def _by_program() -> dict[str, tuple[CliSecret, ...]]:
    found: dict[str, list[CliSecret]] = {}
    for entry in TABLE:
        for program in entry.programs:
            found.setdefault(program, []).append(entry)
    return {name: tuple(entries) for name, entries in found.items()}


_SEPARATORS = str.maketrans(dict.fromkeys("/;&|()`\"'", " "))


@cache
def _programs() -> frozenset[str]:
    return frozenset(_by_program())


def redact_commands(text: str, secret_name: Callable[[str], bool]) -> str:
    """``text`` with the password arguments of the programs in TABLE replaced; ``secret_name(NAME) -> bool``."""
    # A cheap first look (a set lookup per word): most audited strings name none of the programs.
    if _programs().isdisjoint(text.translate(_SEPARATORS).split()):
        return text
    spans: list[tuple[int, int]] = []
    words: list[re.Match[str]] = []
    for match in _WORD.finditer(text):
        if match[0][0] in ";&|\n()`":
            spans.extend(_secrets(words, secret_name))
            words = []
        else:
            words.append(match)
    spans.extend(_secrets(words, secret_name))
    for start, end in sorted(set(spans), reverse=True):
        text = text[:start] + REDACTED + text[end:]
    return text


def _unquote(word: str) -> str:
    return word.strip("\"'")


def _secrets(words: list[re.Match[str]], secret_name: Callable[[str], bool]) -> list[tuple[int, int]]:
    """The spans of secret text in one simple command (its words, as matched in the whole text)."""
    i = 0
    while i < len(words) and (_ASSIGNMENT.match(words[i][0]) or _unquote(words[i][0]) in _WRAPPERS):
        i += 1
    if i >= len(words):
        return []
    program = _unquote(words[i][0]).rsplit("/", 1)[-1]
    rest = words[i + 1 :]
    spans: list[tuple[int, int]] = []
    for entry in _by_program().get(program, ()):
        spans.extend(_entry_secrets(entry, rest, secret_name))
    return spans


def _entry_secrets(
    entry: CliSecret, words: list[re.Match[str]], secret_name: Callable[[str], bool]
) -> list[tuple[int, int]]:
    positional = [w for w in words if not w[0].startswith("-")]
    if entry.subcommand:
        # 'aws --profile p configure set ...': the subcommand may follow global options and their values
        size, names = len(entry.subcommand), [_unquote(w[0]) for w in positional]
        at = next((j for j in range(len(names) - size + 1) if tuple(names[j : j + size]) == entry.subcommand), -1)
        if at < 0:
            return []
        positional = positional[at + size :]
    spans: list[tuple[int, int]] = []
    for index, word in enumerate(words):
        text = word[0]
        for flag in entry.flags:
            if text == flag and index + 1 < len(words):
                spans.append(_value(words[index + 1], 0, entry.after))
            elif text.startswith((flag + "=", flag + ":")):
                spans.append(_value(word, len(flag) + 1, entry.after))
        for flag in entry.glued:
            if text.startswith(flag) and len(text) > len(flag) and text[len(flag)] not in "=-":
                spans.append(_value(word, len(flag), entry.after))
    if entry.position and len(positional) >= entry.position:
        spans.append(_value(positional[entry.position - 1], 0, entry.after))
    if entry.last and positional and any(_short_flag(w[0], entry.last) for w in words):
        spans.append(_value(positional[-1], 0, entry.after))
    if entry.named and len(positional) >= 2 and secret_name(_unquote(positional[0][0])):
        spans.append(_value(positional[1], 0, ""))
    return [span for span in spans if span[0] < span[1]]


def _short_flag(word: str, letter: str) -> bool:
    return word.startswith("-") and not word.startswith("--") and letter in word[1:]


def _value(word: re.Match[str], offset: int, after: str) -> tuple[int, int]:
    """The span of the secret in ``word`` from ``offset``: all of it, or what follows ``after`` (up to an '@')."""
    start, end = word.start() + offset, word.end()
    if not after:
        return start, end
    text = word.string[start:end]
    found = text.find(after)
    if found < 0:
        return start, start  # no password in this spelling ('-U user', '-pass env:VAR')
    stop = text.find("@", found + len(after)) if after == "/" else -1
    return start + found + len(after), start + stop if stop >= 0 else end
