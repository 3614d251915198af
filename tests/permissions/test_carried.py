"""Commands, shell code and writes that a program carries in its arguments
(permissions/programs.py), and deny rules on lines that cannot be checked.

A deny rule sees every carried command; a prefix allow rule authorises the program and
the words it spells out, never what it carries beyond them. The cases that run for real
go through the kernel with the real run_command and check that nothing happened.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codecoder.kernel.events import ConfirmRequest, ToolFinished
from codecoder.permissions import RulePolicy
from codecoder.permissions.modes import ApprovalMode
from codecoder.permissions.shell import MAX_COMMAND_CHARS

from .helpers import World, drive, run, write_user_rules

DENY_RM = {"deny": ["run_command(rm:*)"]}

CARRIED_RM = [
    "trap 'rm -f victim' EXIT",
    "trap -- 'rm -f victim' INT EXIT",
    "script -q -c 'rm -f victim' /dev/null",
    "script -qc 'rm -f victim' /dev/null",
    "flock LOCK rm -f victim",
    "flock -w 5 LOCK rm -f victim",
    "flock LOCK -c 'rm -f victim'",
    "chroot / rm -f victim",
    "unshare rm -f victim",
    "unshare -r -- rm -f victim",
    "strace -f -o /dev/null rm -f victim",
    "ltrace -o /dev/null rm -f victim",
    "runuser -u root -- rm -f victim",
    "runuser root -c 'rm -f victim'",
    "su -c 'rm -f victim'",
    "su root -c 'rm -f victim'",
    "su --command='rm -f victim' root",
    "sg root 'rm -f victim'",
    "ash -c 'rm -f victim'",
    "rbash -c 'rm -f victim'",
    "busybox sh -c 'rm -f victim'",
    "busybox ash -c 'rm -f victim'",
    "toybox sh -c 'rm -f victim'",
    "toybox rm -f victim",
    "watch -n 1 'rm -f victim'",
    "watch -x rm -f victim",
    "setpriv rm -f victim",
    "nsenter rm -f victim",
    "prlimit --nofile=10 rm -f victim",
    "fakeroot rm -f victim",
    "systemd-run --user rm -f victim",
    "time -o /dev/null rm -f victim",
    "nice -n 5 ionice -c 3 rm -f victim",
    "uv run rm -f victim",
    "poetry run rm -f victim",
    "env GIT_PAGER='rm -f victim' git -p log",
    "GIT_PAGER='rm -f victim' git -p log",
    "export EDITOR='rm -f victim'",
    "alias ls='rm -f victim'",
    "find . -name victim -exec rm -f {} \\;",
    "find . -execdir rm -f {} +",
    "find . -ok rm -f {} \\;",
    "ls victim | xargs rm -f",
    "xargs -I{} rm -f {} < list",
    "sed -n 'e rm -f victim' README.md",
    "git rebase --exec 'rm -f victim' HEAD~1",
    "git bisect run rm -f victim",
    "git submodule foreach 'rm -f victim'",
    "man -P 'rm -f victim' ls",
    "nix-shell --run 'rm -f victim'",
    "rsync -e 'rm -f victim' a b:c",
    "tar --to-command='rm -f victim' -xf x.tar",
    # found by the adversarial review of this layer
    "echo \"${x:-'$(rm -f victim)'}\"",
    "echo `echo \\`rm -f victim\\``",
    "compgen -W '$(rm -f victim)' x",
    "OPTIND='a[$(rm -f victim)]'",
    "coproc rm -f victim",
    'bash -c "rm -f victim $X"',
    'trap "rm -f victim $X" EXIT',
    "bash <<'EOF'\nrm -f victim\nEOF",
    "echo 'rm -f victim' | sh",
    "r\\\nm -f victim",
    "true; " * 1800 + "r''m -f victim",
    "setarch x86_64 -R rm -f victim",
    "setpriv --pdeathsig KILL rm -f victim",
    "prlimit -o X rm -f victim",
    "watch -d rm -f victim",
    "awk 'BEGIN{system(\"rm -f victim\")}'",
    "echo victim | xargs -I{} sh -c 'rm -f {}'",
    # the second review
    "git -c alias.x='!rm -f victim' x",
    "git -c core.fsmonitor='rm -f victim' status",
    "tar --checkpoint=1 --checkpoint-action=exec='rm -f victim' -cf /dev/null README",
    "sed -n '1s/.*/rm -f victim/ep' README",
    "ssh -o ProxyCommand='rm -f victim' x",
    "{rm,-f,victim}",
]


@pytest.mark.parametrize("line", CARRIED_RM)
@pytest.mark.parametrize("mode", ["ask", "full-auto", "never-ask"])
def test_a_deny_rule_sees_the_carried_command(
    tmp_path: Path, mode: ApprovalMode, line: str
) -> None:
    write_user_rules(DENY_RM)
    decision = RulePolicy.load(tmp_path, mode).decide(*run(line))
    assert decision.verdict == "deny", decision.reason
    assert "rm:*" in decision.reason


UNREADABLE_RM = [
    "rm -f victim; " + "true; " * 1700,
    "rm -f victim; echo \u200b",
    "rm -f victim; echo 'open",
    "rm -f victim \\\n; true",
    "fish -c 'rm -f victim'",
    "csh -c 'rm -f victim'",
    "bash -c " + "'bash -c " * 45 + "rm -f victim",
]


@pytest.mark.parametrize("line", UNREADABLE_RM)
def test_a_deny_rule_wins_over_a_line_that_cannot_be_checked(tmp_path: Path, line: str) -> None:
    """The reviewer's case: too long to check was asked about, and an answer of allow
    deleted the file the deny rule protects."""
    write_user_rules(DENY_RM)
    decision = RulePolicy.load(tmp_path, "ask").decide(*run(line))
    assert decision.verdict == "deny", decision.reason


def test_a_long_line_is_denied_through_the_kernel_without_a_question(world: World) -> None:
    write_user_rules(DENY_RM)
    victim = world.ws / "victim"
    victim.write_text("keep me\n")
    line = "rm -f victim; " + "true; " * 1700
    assert len(line) > MAX_COMMAND_CHARS
    events = drive(world, "ask", "run_command", {"command": line}, answer="allow_once")
    assert not any(isinstance(e, ConfirmRequest) for e in events)
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.error is not None and finished.error.kind == "denied"
    assert victim.exists()


def test_the_best_effort_split_never_allows(tmp_path: Path) -> None:
    write_user_rules({"allow": ["run_command(true)", "run_command(rm:*)"]})
    decision = RulePolicy.load(tmp_path, "ask").decide(*run("true; " * 2000))
    assert decision.verdict == "ask"


# --- prefix allow rules authorise the program, not what it carries ---------------------

ALLOW_CASES = {
    # rule: (lines that must still ask, lines the rule allows)
    "run_command(find:*)": (
        [
            "find . -exec rm {} \\;",
            "find . -execdir rm {} +",
            "find . -ok rm {} \\;",
            "find . -okdir rm {} \\;",
            "find . -name x -delete",
            "find . -fprint /tmp/out",
            "find . -fprint0 ../out",
            "find . -fprintf ~/out %p",
            "find . -fls /tmp/out",
        ],
        ["find . -name '*.py'", "find src -type f -newer README.md"],
    ),
    "run_command(rg:*)": (
        [
            "rg --pre ./tool foo",
            "rg --pre=./tool foo",
            "rg -z foo",
            "rg --search-zip foo",
            "rg --hostname-bin=./tool foo",
            "rg --ignore-file ~/.ssh/id_rsa foo",
            "rg --ignore-file=/etc/shadow foo .",
        ],
        ["rg foo", "rg -n --glob '*.py' foo src"],
    ),
    "run_command(sed:*)": (
        [
            "sed 'e touch x' f",
            "sed -n 'e' f",
            "sed 's/a/b/e' f",
            "sed 'w /tmp/out' f",
            "sed 's/a/b/w /tmp/out' f",
            "sed -e 'W ../out' f",
            "sed -f script.sed f",
            "sed -i 's/a/b/' f",
            "sed --expression='1e touch x' f",
            "sed -n 's/[/]*.*/touch x;#/e' f",
            "sed 's|[|]*.*|touch x;#|e' f",
            "sed -n 's/[/]*$//w /tmp/out' f",
            "sed -n ':a w /tmp/out' f",
        ],
        ["sed -n '1,20p' f", "sed 's/hello/world/g' f", "sed -e '/x/d' -e 's/we/were/' f"],
    ),
    "run_command(awk:*)": (
        [
            "awk 'BEGIN { system(\"touch x\") }'",
            "awk '{ print | \"sh\" }' f",
            "awk '{ print > \"/tmp/out\" }' f",
            "awk -f prog.awk f",
            'awk \'BEGIN{print "a;b" > "/tmp/out"}\'',
            # a brace in a string or a regex ends no statement
            'awk \'BEGIN{printf "}" > "/tmp/out"}\'',
            'awk \'{print "{", $1 > "/tmp/out"}\' f',
            'awk \'{print "\\"}" > "/tmp/out"}\' f',
            "awk '{print $0 ~ /}/ > \"/tmp/out\"}' f",
            'awk \'{print "}" | "sh"}\' f',
            'awk \'{print "x" \\\n > "/tmp/out"}\' f',
            "awk '{print \"}' f",
        ],
        [
            "awk '{ print $1 }' f",
            "awk -F, '$2 > 3 || $1 == \"a\"' f",
            'awk \'{ print "a > b", "x|y" }\' f',
        ],
    ),
    "run_command(toybox:*)": (["toybox sh -c 'touch x'", "toybox rm x"], ["toybox ls"]),
    "run_command(git:*)": (
        [
            "git -c core.fsmonitor='touch x' status",
            "git -c core.pager='touch x' log",
            "git -c alias.st='!touch x' st",
            "git config core.hooksPath hooks",
            "git config --local core.fsmonitor 'touch x'",
            "git --git-dir=sub status",
            "git log --output=/tmp/out",
            "git grep -O'touch x' foo",
            "git -c protocol.ext.allow=always ls-remote 'ext::sh -c touch% x'",
            "git clone -q -u 'touch x;:' . /tmp/clone",
            "git fetch --upload='touch x;:' .",
            "git push --receive='touch x;:' . HEAD:refs/heads/zz",
            "git rebase --exe='touch x' --root",
            "git -c interactive.diffFilter='touch x' add -p",
            "git clone -q -c diff.external='touch x' . sub",
            "git config --file /tmp/out x.y z",
            "git archive -o /tmp/out HEAD",
            "git bundle create /tmp/out HEAD",
        ],
        ["git status", "git log -p", "git -c color.ui=always log", "git config user.name x"],
    ),
    "run_command(sudo:*)": (["sudo rm -rf x", "sudo -u bob touch x"], ["sudo ls"]),
    "run_command(timeout:*)": (["timeout 5 touch x"], ["timeout 5 ls"]),
    "run_command(env:*)": (
        [
            "env touch x",
            "env X=1 touch x",
            "env GIT_TRACE=/tmp/out git status",
            "env HOME=/tmp/h git diff",
            "env PATH=./x git status",
        ],
        ["env"],
    ),
    "run_command(xargs:*)": (["xargs touch", "xargs -I{} cat {}"], []),
    "run_command(tee:*)": (["tee /tmp/out", "tee -a ../out"], ["tee out.txt"]),
    "run_command(sort:*)": (["sort -o /tmp/out f", "sort --compress-program=./z f"], ["sort f"]),
    "run_command(su:*)": (["su -c 'touch x'", "su"], []),
    "run_command(trap:*)": (["trap 'touch x' EXIT"], ["trap - EXIT", "trap -p"]),
    "run_command(tar:*)": (
        [
            "tar -cf /dev/null --checkpoint=1 --checkpoint-act=exec='touch x' in.txt",
            "tar -xf a.tar --to-comm='touch x'",
            "tar --use-compress='touch x' -cf /dev/null in.txt",
            "tar -cvI'touch x' -f /dev/null in.txt",
            "tar -tvf a.tar --index-file=/tmp/out",
        ],
        ["tar -tf a.tar"],
    ),
    "run_command(curl:*)": (["curl -so /tmp/out file:///etc/hostname"], []),
    "run_command(wget:*)": (["wget -qO /tmp/out http://127.0.0.1:9/"], []),
    "run_command(watch:*)": (["watch -d touch ls"], []),
}


OUTPUT_CASES = {
    "run_command(tee:*)": (
        ["tee /tmp/out", "tee -a ../out", "tee --output-error /tmp/out", "tee -p -- /tmp/out"],
        ["tee out.txt", "tee --output-error=warn out.txt"],
    ),
    "run_command(sort:*)": (
        [
            "sort -o /tmp/out f",
            "sort --compress-program=./z f",
            "sort -uo/tmp/out f",
            "sort --out /tmp/out f",
            "sort -T /tmp f",
            "sort --temporary-d=.git f",
        ],
        ["sort f", "sort -k 2 -o out.txt f"],
    ),
    "run_command(zip:*)": (
        [
            "zip -T -TT 'sh -c \"touch x\"' a.zip",
            "zip -T -TT'touch x' a.zip",
            "zip -T -TT='touch x' a.zip",
            "zip -TqTT 'touch x' a.zip",
            "zip -T --unzip-command='touch x' a.zip",
            "zip -T --unzip-comm 'touch x' a.zip",
            "zip -O /tmp/out a.zip f",
            "zip --output-file=/tmp/out a.zip f",
            "zip -lf /tmp/out -r a.zip f",
            "zip --logfile-path /tmp/out a.zip f",
            "zip -b /tmp a.zip f",
        ],
        ["zip -T a.zip", "zip -O out.txt a.zip f"],
    ),
    "run_command(make:*)": (
        [
            "make --eval='$(shell touch x)' all",
            "make --ev '$(shell touch x)'",
            "make -E '$(shell touch x)'",
            "make -sE'$(shell touch x)'",
            "make 'X:=$(shell touch x)'",
            "make 'X!=touch x'",
            "make SHELL=/tmp/sh test",
            "make 'MAKEFLAGS=--eval=$(shell touch x)'",
            "make -f - all",
            "make ' X:=$(shell touch x)'",
            "make '\tX:=$(shell touch x)'",
            "make ' SHELL=/tmp/sh'",
            "make '$(shell touch x)x=1'",
            "make '$(shell touch$${IFS}x)x=1'",
            "make 'override X=$(shell touch x)'",
            "make 'export SHELL=/tmp/sh'",
            "make 'a b=1'",
        ],
        ["make", "make -j4 test", "make -C src -o stale.o all V=1", "make CFLAGS=-O2 all"],
    ),
    "run_command(patch:*)": (
        [
            "patch -o /tmp/out f fix.diff",
            "patch -o.git/hooks/pre-commit f fix.diff",
            "patch --output=/tmp/out f fix.diff",
            "patch --outp /tmp/out f fix.diff",
            "patch -r /tmp/out f fix.diff",
            "patch --reject-file=/tmp/out f fix.diff",
            "patch -d /tmp -p1 -i fix.diff",
            "patch --dir=.git/hooks -i fix.diff",
            "patch -B /tmp/ f fix.diff",
            "patch -Y ../ f fix.diff",
            # without -o it writes (and creates) the files its patch names
            "patch -p1 -i fix.diff",
            "patch -p1 < fix.diff",
            "patch f fix.diff",
        ],
        ["patch -o out.txt f fix.diff", "patch --dry-run -p1 -i fix.diff", "patch --dry -p1 < x"],
    ),
    "run_command(unzip:*)": (
        ["unzip a.zip -d .git/hooks", "unzip -d/tmp a.zip", "unzip -qod /tmp a.zip"],
        ["unzip a.zip", "unzip -l a.zip", "unzip a.zip -d src"],
    ),
    **{
        f"run_command({program}:*)": (
            [
                f"{program} -t /tmp f",
                f"{program} -t.git/hooks f",
                f"{program} --target=/tmp f",
                f"{program} --target-directory /tmp f",
                *(["install -s --strip-program=./evil f g"] if program == "install" else []),
            ],
            [f"{program} -t src f", f"{program} f g"],
        )
        for program in ("cp", "mv", "install", "ln")
    },
    "run_command(find:*)": (
        ["find -files0-from list -delete", "find -files0-from list -name x -delete"],
        ["find . -name x -delete"],
    ),
    "run_command(zstd:*)": (
        [
            "zstd -o /tmp/out f",
            "zstd -qo /tmp/out f",
            "zstd -of /tmp/out f",
            "zstd -19 -T0 -o .git/hooks/pre-commit f",
            "zstd --output-dir-flat /tmp f",
            "zstd --output-dir-mirror=/tmp f",
            "zstd --trace /tmp/out f",
            "zstd --trace=/tmp/out f",
        ],
        ["zstd -c f", "zstd -o out.txt f"],
    ),
    "run_command(brotli:*)": (
        ["brotli -o /tmp/out f", "brotli -fo /tmp/out f", "brotli --output=/tmp/out f"],
        ["brotli -c f"],
    ),
    "run_command(lz4:*)": (
        ["lz4 f /tmp/out", "lz4 -9 f /tmp/out", "lz4 -m f /tmp/out"],
        ["lz4 -c f"],
    ),
    "run_command(openssl:*)": (
        [
            "openssl rehash /tmp",
            "openssl enc -aes-256-cbc -pbkdf2 -k x -in f -out /tmp/out",
            "openssl req -new -keyout /tmp/out -out req.pem",
            "openssl genrsa -out=.git/hooks/pre-commit 2048",
            "openssl genrsa --out /tmp/out 2048",
            "openssl s_client -connect h:443 -sess_out /tmp/out",
            "openssl s_client -connect h:443 -keylogfile /tmp/out",
            "openssl x509 -req -in r -CA c -CAkey k -CAserial /tmp/out",
            "openssl cms -verify -in m -signer /tmp/out",
            "openssl rand -writerand /tmp/out 8",
            "openssl ca -outdir /tmp -in r",
            "openssl req -engine ./evil.so -new",
            "openssl req -config ./evil.cnf -new",
            "openssl list -provider-path . -provider evil",
            "openssl srp -srpvfile /tmp/out -add u",
        ],
        ["openssl rand -hex 8", "openssl dgst -sha256 f", "openssl genrsa -out out.txt 2048"],
    ),
    "run_command(base64:*)": (
        [
            "base64 -D -i x -o .git/hooks/pre-commit",
            "base64 -d -i x -o /tmp/out",
            "base64 -Do /tmp/out",
            "base64 --output=/tmp/out f",
            "base64 --outp /tmp/out f",
        ],
        ["base64 f", "base64 -d -i f", "base64 -o out.txt f"],
    ),
    "run_command(gpg:*)": (
        [
            "gpg -o /tmp/out -d f.gpg",
            "gpg -ao /tmp/out -e f",
            "gpg --output=/tmp/out -c f",
            "gpg --out /tmp/out -d f.gpg",
            "gpg --log-file /tmp/out -d f.gpg",
            "gpg --status-file=/tmp/out -d f.gpg",
            "gpg --homedir /tmp/h --import k.asc",
            "gpg --photo-viewer 'touch x' --list-keys",
            "gpg --exec-path /tmp --list-keys",
            "gpg --agent-program ./evil -d f.gpg",
            "gpg --use-embedded-filename f.gpg",
            "gpg --keyring /tmp/out --import k.asc",
            "gpg --secret-keyring=/tmp/out --import k.asc",
            "gpg --primary-keyring /tmp/out --import k.asc",
            "gpg --trustdb-name /tmp/out --import-ownertrust f",
        ],
        ["gpg --list-keys", "gpg -d f.gpg", "gpg -o out.txt -d f.gpg"],
    ),
    "run_command(iconv:*)": (
        [
            "iconv -f utf-8 -t ascii -o /tmp/out f",
            "iconv -f utf-8 -t ascii -o.git/hooks/pre-commit f",
            "iconv -cso /tmp/out f",
            "iconv --output=/tmp/out f",
            "iconv --out /tmp/out f",
        ],
        ["iconv -f utf-8 -t ascii f", "iconv -o out.txt f"],
    ),
    "run_command(split:*)": (
        [
            "split f /tmp/out",
            "split -l 10 f /tmp/out",
            "split --lines 10 f /tmp/out",
            "split -a 3 -d -- f .git/hooks/pre",
            "split --filter='touch x' f",
        ],
        ["split -l 10 f out.txt"],
    ),
    "run_command(csplit:*)": (
        [
            "csplit -f /tmp/out f 2",
            "csplit -s -f.git/hooks/pre f 2",
            "csplit --prefix=/tmp/out f 2",
            "csplit --pre /tmp/out f 2",
            "csplit -b '/../../tmp/x%02d' f 2",
        ],
        ["csplit -f out.txt f 2"],
    ),
    "run_command(xxd:*)": (
        [
            "xxd f /tmp/out",
            "xxd -r f .git/hooks/pre-commit",
            "xxd -c 4 f /tmp/out",
            "xxd -cols 4 f /tmp/out",
            "xxd -len 2 f /tmp/out",
            "xxd -seek 1 f /tmp/out",
            "xxd -skip 1 f /tmp/out",
            "xxd -groupsize 2 f /tmp/out",
            "xxd -name x -i f /tmp/out",
            "xxd -offset 2 f /tmp/out",
            "xxd -ps -c 2 f /tmp/out",
        ],
        ["xxd f", "xxd -c 4 f", "xxd -cols 4 f", "xxd f out.txt"],
    ),
    "run_command(uniq:*)": (
        ["uniq f /tmp/out", "uniq --skip-chars 1 f /tmp/out", "uniq --check-chars 1 f /tmp/out"],
        ["uniq -f 1 f", "uniq --skip-fields 1 f out.txt"],
    ),
    "run_command(tree:*)": (
        ["tree -o /tmp/out", "tree -R -H . -o x.html", "tree -fRo x.html"],
        ["tree -L 2", "tree -o x.html"],
    ),
    "run_command(strace:*)": (["strace -o '|touch x' ls", "strace -o '!touch x' ls"], []),
    "run_command(script:*)": (
        ["script -q -c true -O /tmp/out", "script -c true --log-timing=/tmp/out"],
        [],
    ),
    "run_command(rsync:*)": (
        ["rsync --log-file=/tmp/out a b", "rsync --write-batch=/tmp/out a b"],
        [],
    ),
    "run_command(ssh:*)": (
        [
            "ssh -vF /tmp/cfg h",
            "ssh -E /tmp/out h",
            "ssh -o UserKnownHostsFile=/tmp/out h",
            "ssh -oPKCS11Provider=./evil.so h",
            "ssh -I ./evil.so h",
        ],
        ["ssh -p 2222 h", "ssh -i key -o ServerAliveInterval=5 h"],
    ),
    "run_command(curl:*)": (
        ["curl --hsts /tmp/out https://h", "curl --alt-svc=/tmp/out https://h"],
        ["curl -s https://h"],
    ),
    "run_command(wget:*)": (
        ["wget --save-cookies /tmp/out http://h", "wget --warc-file=/tmp/out http://h"],
        [],
    ),
    "run_command(tar:*)": (
        [
            "tar -g /tmp/out -cf a.tar f",
            "tar --listed-incremental=/tmp/out -cf a.tar f",
            "tar --rmt-command=./evil -tf h:a.tar",
            # the old style: the first word's letters are options, their values follow
            "tar cIf 'touch x' a.tar f",
            "tar xFf 'touch x' a.tar",
            "tar cgf /tmp/out a.tar f",
            "tar xfC a.tar .git/hooks",
            "tar tf a.tar --to-command='touch x'",
            "tar $OPTS a.tar",
            # the folder it extracts into, the archive it creates
            "tar -xf a.tar -C .git/hooks",
            "tar -C/tmp -xf a.tar",
            "tar --directory .git/hooks -xf a.tar",
            "tar -x --dir=/tmp -f a.tar",
            "tar -cf .git/hooks/pre-commit f",
            "tar -cf /tmp/out f",
            "tar --file=/tmp/out -c f",
            "tar -rf /tmp/out f",
            "tar cf /tmp/out f",
            "tar -F 'touch x' -cMf a.tar f",
        ],
        [
            "tar -tf a.tar",
            "tar tf a.tar",
            "tar xzf a.tar.gz",
            "tar -xf a.tar -C src",
            "tar czf out.txt f",
            "tar -czf - f",
            "tar -cf /dev/null f",
        ],
    ),
    "run_command(man:*)": (["man -C ./man.conf ls"], ["man ls"]),
    "run_command(sftp:*)": (["sftp -b cmds h", "sftp -D ./server h", "sftp -S ./prog h"], []),
    "run_command(scp:*)": (["scp -S ./prog a h:b"], []),
}
"""Issue 25, item 5: options that run a command or name a file the program writes, by
the programs' manuals (and their parsers: zip's `-TT` in a cluster, zstd's `-o` whose
value is always the next word, xxd's and openssl's whole-word options). Judged in
`auto-edit`, where a write inside the workspace is allowed: only the carried command,
a write outside or into a protected entry asks."""


def assert_decisions(policy: RulePolicy, asks: list[str], allowed: list[str]) -> None:
    """Each line of `asks` asks and each of `allowed` is allowed, under `policy`."""
    for line, verdict in [*((a, "ask") for a in asks), *((a, "allow") for a in allowed)]:
        decision = policy.decide(*run(line))
        assert decision.verdict == verdict, (line, decision.reason)


@pytest.mark.parametrize("rule", list(ALLOW_CASES))
def test_a_prefix_rule_authorises_the_program_not_what_it_carries(
    tmp_path: Path, rule: str
) -> None:
    write_user_rules({"allow": [rule, "edit(out.txt)"]})
    assert_decisions(RulePolicy.load(tmp_path, "ask"), *ALLOW_CASES[rule])


@pytest.mark.parametrize("rule", list(OUTPUT_CASES))
def test_an_option_that_runs_or_writes_is_not_covered_by_a_prefix_rule(
    tmp_path: Path, rule: str
) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    write_user_rules({"allow": [rule, "run_command(ls)"]})
    assert_decisions(RulePolicy.load(tmp_path, "auto-edit"), *OUTPUT_CASES[rule])


def test_a_sed_command_with_escapes_is_not_checked_as_written(tmp_path: Path) -> None:
    """sed drops the backslashes of `e COMMAND` before it runs it: `echo\\;touch x` runs
    `echo;touch x`, which a rule for echo must not cover."""
    write_user_rules({"allow": ["run_command(sed:*)", "run_command(echo:*)"]})
    policy = RulePolicy.load(tmp_path, "ask")
    assert policy.decide(*run("sed '1e echo hi' f")).verdict == "allow"
    for line in ("sed '1e echo\\;touch x' f", "sed '1e echo\\ntouch x' f"):
        assert policy.decide(*run(line)).verdict == "ask", line


def test_the_carried_command_is_allowed_by_a_rule_of_its_own(tmp_path: Path) -> None:
    write_user_rules({"allow": ["run_command(find:*)", "run_command(grep:*)"]})
    decision = RulePolicy.load(tmp_path, "ask").decide(*run("find . -exec grep -l x {} +"))
    assert decision.verdict == "ask"  # `{}` is only known at run time
    write_user_rules({"allow": ["run_command(sudo:*)", "run_command(make test)"]})
    assert RulePolicy.load(tmp_path, "ask").decide(*run("sudo make test")).verdict == "allow"


@pytest.mark.parametrize(
    "rule",
    ["run_command(sudo make test)", "run_command(sudo make:*)", "run_command(timeout 5 make:*)"],
)
def test_a_rule_that_spells_out_the_carried_command_covers_it(tmp_path: Path, rule: str) -> None:
    write_user_rules({"allow": [rule]})
    line = "timeout 5 make test" if "timeout" in rule else "sudo make test"
    assert RulePolicy.load(tmp_path, "ask").decide(*run(line)).verdict == "allow"


def test_always_for_this_project_writes_one_rule_for_a_carrier(tmp_path: Path) -> None:
    from codecoder import paths

    policy = RulePolicy.load(tmp_path, "ask")
    tool, request = run("sudo make test")
    policy.remember(tool, request, "project")
    local = paths.project_dir(tmp_path) / "config.local.toml"
    assert "run_command(sudo make test)" in local.read_text()
    assert "run_command(make test)" not in local.read_text()


FIND_ATTACKS = {
    "find -exec": ("find . -name README.md -exec touch {out}/exec \\;", "exec"),
    "find -execdir": ("find . -name README.md -execdir touch {out}/execdir \\;", "execdir"),
    "find -fprint": ("find . -name README.md -fprint {out}/fprint", "fprint"),
    "find -fls": ("find . -name README.md -fls {out}/fls", "fls"),
    "sed e": ("sed -n '1e touch {out}/sed-e' README.md", "sed-e"),
    "sed w": ("sed -n 'w {out}/sed-w' README.md", "sed-w"),
    "rg --pre": ("rg --pre ./tool hello", "pre"),
}


@pytest.mark.parametrize("case", list(FIND_ATTACKS))
@pytest.mark.parametrize("mode", ["ask", "never-ask", "full-auto"])
def test_carried_effects_never_happen_through_the_kernel(
    world: World, mode: ApprovalMode, case: str
) -> None:
    write_user_rules({"allow": ["run_command(find:*)", "run_command(sed:*)", "run_command(rg:*)"]})
    line, marker = FIND_ATTACKS[case]
    if mode == "full-auto" and case == "rg --pre":
        pytest.skip("full-auto runs a program of the workspace by design")
    tool = world.ws / "tool"
    tool.write_text(f'#!/bin/sh\ntouch {world.out}/pre\ncat "$1"\n')
    tool.chmod(0o755)
    events = drive(world, mode, "run_command", {"command": line.format(out=world.out)})
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.error is not None and finished.error.kind == "denied"
    assert not (world.out / marker).exists()


def test_a_deny_rule_for_a_git_subcommand_sees_past_global_options(tmp_path: Path) -> None:
    write_user_rules({"allow": ["run_command(git:*)"], "deny": ["run_command(git push:*)"]})
    policy = RulePolicy.load(tmp_path, "ask")
    for line in ("git -C . push origin main", "git --no-pager push", "git -c x.y=1 push"):
        assert policy.decide(*run(line)).verdict == "deny", line


def test_a_git_alias_is_seen_for_what_it_runs(tmp_path: Path) -> None:
    write_user_rules({"allow": ["run_command(git:*)"], "deny": ["run_command(git push:*)"]})
    policy = RulePolicy.load(tmp_path, "ask")
    assert policy.decide(*run("git -c alias.p=push p origin main")).verdict == "deny"


FULL_AUTO_WRITES = [
    "tar -cf p.tar --transform='s,^,.git/hooks/,' pre-commit && tar -xf p.tar",
    "cp -t/tmp/elsewhere README",
    "cp README -t/tmp/elsewhere",
    "tar -cf/tmp/out.tar README",
    "install -D -t/tmp/elsewhere/.config README",
    "set -o history; history -r notes.txt; HISTFILE=/tmp/out history -w",
    "GIT_COMMON_DIR=cfg GIT_OBJECT_DIRECTORY=.git/objects git diff",
]


@pytest.mark.parametrize("line", FULL_AUTO_WRITES)
def test_full_auto_sees_writes_through_option_values(tmp_path: Path, line: str) -> None:
    assert RulePolicy(tmp_path, "full-auto").decide(*run(line)).verdict == "ask"


@pytest.mark.parametrize(
    ("rule", "line"),
    [
        ("run_command(sed -n:*)", "sed -n 'e touch x' f"),
        ("run_command(sed -n:*)", "sed -n 'w /tmp/out' f"),
        ("run_command(git clone:*)", "git clone -q -c diff.external='touch x' . sub"),
        ("run_command(bash -c:*)", "bash -c 'touch x'"),
        ("run_command(tar -x:*)", "tar -x --to-command='touch x' -f a.tar"),
    ],
)
def test_a_prefix_rule_of_options_does_not_cover_the_code_after_them(
    tmp_path: Path, rule: str, line: str
) -> None:
    write_user_rules({"allow": [rule]})
    assert RulePolicy.load(tmp_path, "ask").decide(*run(line)).verdict == "ask"
