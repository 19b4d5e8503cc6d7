"""Credential-bearing command lines from the documented password arguments of common CLIs, through the audit.

Hostile review 2026-11-28 N3: ``docker login -p``, ``aws configure set aws_secret_access_key``, ``openssl -k``,
``htpasswd -b`` and ``;jsessionid=`` reached ``.toolrig/audit.db`` in clear. The corpus is a table (one row per
documented spelling, ``{pw}`` where the secret goes); each row is a real call whose audit row must not hold it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.policy.redact import redact
from toolrig.rig import Rig

CORPUS = [
    "docker login -u me -p {pw} registry.example.com",
    "docker login --username me --password {pw} r.example",
    "docker login -u me --password={pw} r.example",
    "sudo docker login -p {pw} ghcr.io",
    "/usr/bin/docker --config /tmp/c login -p '{pw}' ghcr.io",
    "podman login -u me -p {pw} quay.io",
    "helm registry login r.example -u me -p {pw}",
    "helm repo add x https://charts.example --username me --password {pw}",
    "aws configure set aws_secret_access_key {pw}",
    "aws configure set aws_session_token {pw}",
    "aws --profile dev configure set default.aws_secret_access_key {pw}",
    "npm config set //registry.npmjs.org/:_authToken {pw}",
    "npm config set //registry.npmjs.org/:_authToken={pw}",
    "openssl enc -aes256 -k {pw} -in f -out g",
    "openssl enc -aes256 -pass pass:{pw} -in f -out g",
    "openssl pkcs12 -export -in c -inkey k -passout pass:{pw} -out p.p12",
    "openssl rsa -in k.pem -passin 'pass:{pw}'",
    "htpasswd -b .htpasswd admin {pw}",
    "htpasswd -nbB admin {pw}",
    "htpasswd -cb /etc/nginx/.htpasswd admin {pw}",
    "mysql -u root -p{pw} db",
    "mysql -uroot -p'{pw}' -e 'select 1'",
    "mysqldump --user=root --password={pw} db > d.sql",
    "psql postgresql://app:{pw}@db.example/app",
    "PGPASSWORD={pw} psql -h db -U app",
    "psql 'host=db user=app password={pw}'",
    "sshpass -p {pw} ssh me@host",
    "sshpass -p{pw} scp f me@host:",
    "SSHPASS={pw} sshpass -e ssh me@host",
    "curl -u me:{pw} https://api.example",
    "curl --user me:{pw} https://api.example",
    "curl -H 'Authorization: Bearer {pw}' https://api.example",
    "curl --oauth2-bearer {pw} https://api.example",
    "git clone https://me:{pw}@github.com/o/r.git",
    "git remote set-url origin https://x-access-token:{pw}@github.com/o/r",
    "curl 'https://app.example/cart;jsessionid={pw}?x=1'",
    "curl https://app.example/index.php?PHPSESSID={pw}",
    "smbclient //host/share -U me%{pw}",
    "smbclient //host/share --user=me%{pw}",
    "redis-cli -h r -a {pw} ping",
    "redis-cli --pass {pw} ping",
    "redis-cli -u redis://:{pw}@localhost:6379",
    "mongosh 'mongodb://me:{pw}@db/app'",
    "mongo --username me --password {pw}",
    "mongosh -u me -p {pw}",
    "ldapsearch -x -D cn=admin -w {pw} -b dc=ex",
    "sqlcmd -S db -U sa -P {pw}",
    "sqlplus scott/{pw}@orcl",
    "zip -P {pw} a.zip f",
    "7z a -p{pw} a.7z f",
    "ssh-keygen -p -P {pw} -N {pw} -f key",
    "keytool -genkey -alias a -storepass {pw} -keypass {pw}",
    "az login --service-principal -u id -p {pw} --tenant t",
    "twine upload -u __token__ -p {pw} dist/*",
    "vault login {pw}",
    "bw unlock {pw}",
    "mc alias set s3 https://s3.example AKID {pw}",
    "rabbitmqctl add_user bob {pw}",
    "wget --password={pw} https://x.example/f",
    "wget --http-password {pw} https://x.example/f",
    "gh secret set TOKEN --body {pw}",
    "kubectl create secret generic s --from-literal=password={pw}",
    "docker run -e DB_PASSWORD={pw} img",
    "java -Djavax.net.ssl.keyStorePassword={pw} -jar app.jar",
    "lftp -u me,{pw} ftp.example",
    "mosquitto_pub -u me -P {pw} -t t -m m",
    "doctl auth init -t {pw}",
    "net user bob {pw} /add",
    "cmdkey /add:host /user:me /pass:{pw}",
    "ansible all -e ansible_password={pw}",
    "ansible all -e ansible_ssh_pass={pw}",
    "rclone config create s3 s3 secret_access_key={pw}",
    "export MYSQL_PWD={pw}",
    "RSYNC_PASSWORD={pw} rsync a rsync://me@h/m",
    "dotnet user-secrets set ApiKey {pw}",
    "cf auth me {pw}",
    "cd app && docker login -p {pw} r.example; echo done",
]


def test_no_password_of_the_corpus_reaches_the_audit_database(workspace: Path) -> None:
    config = {
        "audit": {"enabled": True},
        "tools": {"rules": [{"tool": "run_command", "subject": "*", "verdict": "deny"}]},
    }
    with Rig(workspace, config) as rig:
        for n, template in enumerate(CORPUS):
            result = rig.call_sync("run_command", {"command": template.format(pw=f"LEAK{n:03d}x")})
            assert result.is_error  # refused by the rule: nothing ran, the audit row was written
        fetched = rig.call_sync("fetch_url", {"url": "https://none.invalid/app;jsessionid=LEAK999x"})
        assert fetched.is_error
        database = rig.governance.audit.path
    rows = sqlite3.connect(database).execute("SELECT * FROM calls").fetchall()
    assert len(rows) >= len(CORPUS) + 1
    dump = repr(rows)
    assert "LEAK" not in dump, [template for n, template in enumerate(CORPUS) if f"LEAK{n:03d}x" in dump]


# A password is any text a person may choose: letters, digits and the punctuation a shell word keeps.
PASSWORDS = st.text(alphabet=st.sampled_from("abcXYZ019!#^*+_.~-"), min_size=1, max_size=16).map(lambda s: "Lk" + s)


@pytest.mark.parametrize("template", CORPUS)
@settings(max_examples=15, deadline=None)
@given(password=PASSWORDS)
def test_any_password_in_a_documented_position_is_redacted(template: str, password: str) -> None:
    line = template.format(pw=password)
    assert password not in str(redact({"command": line})), line


@pytest.mark.parametrize(
    "line",
    [
        "mkdir -p build/out",
        "ssh -p 2222 me@host",
        "git log -p -3",
        "cp -p a b",
        "docker run -p 8080:80 nginx",
        "openssl enc -aes256 -pass env:KEY -in f",
        "smbclient //host/share -U me",
        "aws configure set default.region eu-west-1",
        "htpasswd -B .htpasswd admin",
        "tar -xkf a.tar",
    ],
)
def test_flags_that_are_not_passwords_for_their_program_are_kept(line: str) -> None:
    assert redact(line) == line


FLAG_WORDS = ["password", "passwd", "pass", "pw", "pwd", "secret", "token", "api-key", "passphrase", "storepass"]


@settings(max_examples=200, deadline=None)
@given(
    program=st.sampled_from(["tool", "./deploy.sh", "python manage.py", "any-cli sub"]),
    prefix=st.sampled_from(["", "db-", "admin-", "root_", "new-", "old-", "http-", "proxy-", "auth-"]),
    word=st.sampled_from(FLAG_WORDS),
    dashes=st.sampled_from(["-", "--"]),
    joiner=st.sampled_from([" ", "=", "  "]),
    password=PASSWORDS,
)
def test_the_argument_after_any_password_like_flag_is_redacted(
    program: str, prefix: str, word: str, dashes: str, joiner: str, password: str
) -> None:
    """The general rule, for programs no table knows: ``--db-password PW``, ``-storepass=PW``, ``--pw PW``."""
    line = f"{program} {dashes}{prefix}{word}{joiner}{password} --verbose"
    redacted = str(redact(line))
    assert password not in redacted and "--verbose" in redacted, (line, redacted)
