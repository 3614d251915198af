"""The private object store of one workspace: a git directory of ours (docs/undo.md).

`$XDG_DATA_HOME/codecoder/checkpoints/<sha256 of the workspace's real path>/` holds a
git directory with its own index (`GIT_DIR`, `GIT_INDEX_FILE`, `GIT_WORK_TREE` set for
every call), so snapshots never touch the user's `.git` or index, work outside any
repository, and survive the user's `git gc`. We never commit; objects are added here
and removed only by prune.py (what no checkpoint refers to), and a file over `max_file`
is never added (`stage`).

A repository is untrusted input, so git runs here as it runs nowhere else:

- no config but ours: `GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`, and GIT_DIR
  is ours, so the repository's `.git/config` (filters, fsmonitor, hooksPath, includes,
  aliases) is never read; the settings of tools/environment.py (`core.fsmonitor=false`
  and `safe.bareRepository=explicit` in the command-line scope, `GIT_CEILING_DIRECTORIES`)
  come on top, and `core.hooksPath=/dev/null`;
- no attributes of the work tree: `info/attributes` of our directory (which outranks
  every `.gitattributes`) unsets `text`, `eol`, `filter`, `ident`, `working-tree-encoding`
  and `crlf` for every path, so a blob is the file's bytes, and no filter driver runs;
- the work tree's `.gitignore` files and `.git/info/exclude` decide what is ignored (the
  issue's "ignored files excluded"); a `.git` folder is never added (git skips the name),
  and a nested repository is kept as a pointer (a gitlink), never restored; no git
  process of ours runs in it (`stage`: `git add -A` ran `git status` there, under its
  config).

Blobs of single files are written and read here in Python (git's loose object format), so
a file tool's checkpoint costs no git process at all; a snapshot is `stage` (one walk
that lists what changed, `git update-index` of that) and a copy of the index
(`index_now`: the index's stat cache makes an unchanged tree cost a walk, not a read of
every file) and, when convenient, `git write-tree` of the copy (`tree_of`);
`changes_since` stages again and runs one `git diff-index`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import stat
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import msgspec

from codecoder import hostgit, paths
from codecoder.boundary import is_own_database
from codecoder.hostgit import repository_top
from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.tools.environment import add_git_safety, git_ceiling

MODES = ("100644", "100755", "120000")
"""The modes of a file we restore (a gitlink, 160000, is never restored)."""
ATTRIBUTES = "* -text -eol -crlf -filter -ident -working-tree-encoding -diff -merge -delta\n"
EXCLUDES = ".codecoder/config.local.toml\n"
"""Never snapshotted: CodeCoder's own answers, written while a turn asks."""
MB = 1 << 20
HELD = "held-back.json"
"""The files over `max_file` that the snapshots leave out, with their size and mtime."""
_decode_held = msgspec.json.Decoder(dict[str, tuple[int, int]]).decode
GIT_TIMEOUT = 120.0
LOCK_POLL = 0.02
"""Seconds between looks at the cancel while another session holds the store's lock."""
TRIM_THRESHOLD = 64 * MB
"""glibc's malloc, for our git: `update-index` frees zlib's buffers of each object it
writes at the top of its heap, which glibc then gave back to the system and took again
for the next, a page fault per page each time: staging 50,000 new files took 3.5 s
instead of `git add`'s 1.4 (tmpfs; nearly all of it system time). A fixed threshold
ends that (1.3 s); other C libraries ignore the variable."""
UPDATE = ("update-index", "--add", "--remove", "--replace", "-z", "--stdin")
"""Stages exactly the paths given: new or changed ones read, gone ones taken out, a file
that became a folder (or the reverse) replaced; a path gone since it was listed is no
error."""


_copies = itertools.count()
"""Numbers the index copies of this process (`index_now`)."""


def _copy_new(source: Path, target: Path) -> None:
    """Copy into a file made here and now: a name already taken (a symlink planted to
    send our write elsewhere, or any file) is refused, and neither end is followed if it
    is a symlink."""
    import shutil

    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    made = False
    try:
        with open(os.open(source, os.O_RDONLY | flags), "rb") as reader:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flags, 0o600)
            made = True
            with open(fd, "wb") as out:
                shutil.copyfileobj(reader, out)
    except OSError as exc:
        if made:  # ours, half written (a full disk): nobody else may find it
            target.unlink(missing_ok=True)
        raise StoreError(f"cannot make {target} from {source}: {exc.strerror}") from exc


class StoreError(Exception):
    """The object store cannot be used (no git, a full disk, a damaged store)."""


class TooLarge(StoreError):
    """A file over the store's `max_file` (`[undo] max_file_mb`): never kept."""


class FileState(msgspec.Struct, frozen=True, array_like=True):
    """A file as a blob: `mode` (100644, 100755, 120000 for a symlink) and its id."""

    mode: str
    sha: str


Change = tuple[str, FileState | None, FileState | None]
"""A path, as it was before and after (None: absent, or not kept)."""


def store_dir(workspace: Path) -> Path:
    import hashlib  # with OpenSSL, ~10 ms: at the first change, not at start-up

    real = os.path.realpath(workspace)
    return paths.data_dir() / "checkpoints" / hashlib.sha256(real.encode()).hexdigest()[:32]


class ObjectStore:
    """The object store of `workspace` (created on first use; nothing of it is imported,
    hashed or made before the first call that may change a file)."""

    def __init__(
        self, workspace: Path, directory: Path | None = None, *, max_file: int | None = None
    ) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.max_file = max_file
        """Bytes above which a file is never kept (None: no limit; restore needs none)."""
        self._dir = directory
        self._env: dict[str, str] | None = None
        self._ready = False

    @property
    def dir(self) -> Path:
        if self._dir is None:
            self._dir = store_dir(self.workspace)
        return self._dir

    # --- blobs, in Python ----------------------------------------------------------------

    def write_blob(self, data: bytes) -> str:
        """Keep `data` as a blob; returns its id (git's: sha1 of `blob <size>\\0` + data)."""
        import hashlib
        import tempfile

        header = f"blob {len(data)}\0".encode()
        sha = hashlib.sha1(header + data, usedforsecurity=False).hexdigest()
        path = self._object_path(sha)
        if not path.exists():
            self.ensure()
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(zlib.compress(header + data, 1))
                os.replace(temp, path)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        return sha

    def read_blob(self, sha: str) -> bytes:
        """A blob's bytes (StoreError when the store does not have it)."""
        try:
            raw = zlib.decompress(self._object_path(sha).read_bytes())
        except FileNotFoundError:
            return self._read_with_git(sha)
        except (OSError, zlib.error) as exc:
            raise StoreError(
                f"object {sha[:12]} of the checkpoint store is damaged: {exc}"
            ) from exc
        head, _, body = raw.partition(b"\0")
        if not head.startswith(b"blob "):
            raise StoreError(f"object {sha[:12]} is not a file's content")
        return body

    def state_of(self, path: Path, *, keep: bool) -> tuple[FileState | None, bytes | None]:
        """What `path` is now (None: absent) and its bytes (a symlink's: its target);
        `keep` writes the blob too. A folder or a special file is StoreError."""
        try:
            info = path.lstat()
        except FileNotFoundError:
            return None, None
        except NotADirectoryError:
            return None, None
        if stat.S_ISLNK(info.st_mode):
            data, mode = os.fsencode(os.readlink(path)), "120000"
        elif stat.S_ISREG(info.st_mode):
            if is_own_database(info):  # opening it here would drop SQLite's locks
                raise StoreError(f"{path} is the session store in use; it is not read")
            if self.max_file is not None and info.st_size > self.max_file:
                raise TooLarge(self.too_large())
            data = path.read_bytes()
            mode = "100755" if info.st_mode & stat.S_IXUSR else "100644"
        else:
            raise StoreError(f"{path} is not a file")
        sha = self.write_blob(data) if keep else _blob_id(data)
        return FileState(mode, sha), data

    def too_large(self) -> str:
        """Why a file is not kept, as a checkpoint says it."""
        return f"over [undo] max_file_mb ({(self.max_file or 0) / MB:g} MB): not kept"

    def _object_path(self, sha: str) -> Path:
        if len(sha) != 40 or not all(c in "0123456789abcdef" for c in sha):
            raise StoreError(f"not an object id: {sha!r}")
        return self.dir / "objects" / sha[:2] / sha[2:]

    def _read_with_git(self, sha: str) -> bytes:
        """A blob git packed (we never do; a user may have run git gc on the store)."""
        result = self.git("cat-file", "blob", sha, check=False)
        if result.returncode != 0:
            raise StoreError(f"the checkpoint store has no object {sha[:12]}")
        return result.stdout

    # --- snapshots, with git ---------------------------------------------------------------

    def index_now(self, cancel: CancelToken | None = None) -> Path:
        """The work tree now (untracked files in, ignored ones out), as a copy of our
        index whose tree `tree_of` writes later: only the staging is on the caller's path
        (`run_command`'s snapshot before it is on the turn's path; the tree is written
        while the command runs, off it). The caller holds `locked`. A cancel kills git at
        once, a large tree takes seconds (raises Cancelled)."""
        with self._cleaning():
            self.stage(cancel)  # what they did is not a command's: nothing to say
            copy = self.dir / f"index.before-{os.getpid()}-{next(_copies)}"
            _copy_new(self.dir / "index", copy)
        return copy

    def tree_of(self, index: Path) -> str:
        """The tree of an index `index_now` kept (removed here, whatever happens). While
        our index is still the same, the tree is written from it: git keeps the trees it
        wrote in the index it wrote them from, and the next snapshot then writes only the
        folders that changed (from the copy, every snapshot wrote every folder's tree
        again: 56 against 24.5 ms after a command on 10,000 files, bench_undo)."""
        try:
            live = self.dir / "index"
            same = live.read_bytes() == index.read_bytes()
            with self._cleaning():
                written = self.git("write-tree", index=None if same else index)
            return written.stdout.decode().strip()
        finally:
            index.unlink(missing_ok=True)

    def changes_since(self, before: str) -> tuple[list[Change], list[Change]]:
        """Snapshot the work tree again and say which files differ from the snapshot
        `before`: (path, before, after), and apart, those over `max_file` that changed
        (the after is None: not kept). One walk, and one diff of the index against
        `before` (no second tree is written)."""
        with self._cleaning():
            large = set(self.stage())
        raw = self.git("diff-index", "--cached", "-z", "--raw", "--no-renames", before).stdout
        found: list[Change] = []
        lost: dict[str, Change] = {path: (path, None, None) for path in large}
        fields = raw.split(b"\0")
        for index in range(0, len(fields) - 1, 2):
            meta, name = fields[index], fields[index + 1]
            old_mode, new_mode, old_sha, new_sha, _ = meta.lstrip(b":").decode().split(" ")
            path, was = os.fsdecode(name), _state(old_mode, old_sha)
            if path in large:
                lost[path] = (path, was, None)
            else:
                found.append((path, was, _state(new_mode, new_sha)))
        return found, sorted(lost.values())

    def stage(self, cancel: CancelToken | None = None) -> list[str]:
        """Bring our index to the work tree (untracked files in, ignored ones out, files
        over `max_file` out) in one walk of it. It was `git add --all`, a walk, after a
        `git ls-files` of what changed that found the files over `max_file`, a second
        one (bench_undo, 10,000 files: the snapshot before a command went from 22 to 39
        ms of CPU; with one walk, 23). The listing is now the only walk, split as `git
        add` splits it and run side by side: `diff-files` stats what our index holds,
        `ls-files --others` reads the folders for new files. The files over `max_file`
        are taken out of it here, by a stat of each listed path, and `update-index`
        stages exactly the rest, which walks nothing (and when nothing changed, no
        process runs for it).

        `diff-files`, not `ls-files --modified`: it also lists a file whose stat changed
        but not its bytes (a touch, a checkout there and back), so `update-index` takes
        its new stat; `ls-files` compared its bytes again at every later snapshot (10,000
        touched files: ~50 ms of CPU a snapshot, for good). `--ignore-submodules=dirty`:
        `git add --all` ran `git status` inside each nested repository, a git of ours
        under that repository's own config (its clean filter ran); only its commit is
        kept anyway, and that is still compared.

        Returns the paths over `max_file` that came over the limit, or changed, grew back
        under it or went while held back: what the snapshot cannot say. The caller holds
        `locked`."""
        held = self._held() if self.max_file is not None else {}
        moved = self._review_held(held)
        if moved:  # before the listing, so that what came back under the limit is in it
            self._save_held(held)
        tracked, untracked = self._side_by_side(
            ("diff-files", "-z", "--raw", "--ignore-submodules=dirty"),
            ("ls-files", "-z", "--others", "--exclude-standard"),
            cancel=cancel,
        )
        changed, gone = _changed(tracked)
        others = untracked.split(b"\0")[:-1]
        repos = [name[:-1] for name in others if name.endswith(b"/")]
        if repos:
            others = [name for name in others if not name.endswith(b"/")]
        new: list[str] = []
        if self.max_file is not None:
            skip = {os.fsencode(path) for path in held}  # held with a newline: not excluded
            changed, grown = self._over_limit(changed, skip, held, new)
            others, _ = self._over_limit(others, skip, held, new)
            gone += grown  # out of our index, or its old bytes would stay in every snapshot
        if gone:
            names = b"".join(name + b"\0" for name in gone)
            self.git("update-index", "-z", "--force-remove", "--stdin", input=names, cancel=cancel)
        listed = list(dict.fromkeys([*changed, *others]))
        if listed or not (self.dir / "index").exists():  # an empty work tree: an empty index
            names = b"".join(name + b"\0" for name in listed)
            self.git(*UPDATE, input=names, cancel=cancel)
        if repos:
            self._stage_repositories(repos, cancel)
        if new:
            self._save_held(held)
        return [*moved, *new]

    def _review_held(self, held: dict[str, tuple[int, int]]) -> list[str]:
        """The files held back that changed, went or came back under the limit (taken
        out of `held`, changed in place: from now on they are listed and kept again)."""
        moved: list[str] = []
        for path, seen in list(held.items()):
            now = _size_and_time(self.workspace / path)
            if now is None or now[0] <= (self.max_file or 0):
                del held[path]  # gone, or kept again from now on
            if now != seen:
                moved.append(path)
                if path in held and now is not None:
                    held[path] = now
        return moved

    def _over_limit(
        self,
        names: list[bytes],
        skip: set[bytes],
        held: dict[str, tuple[int, int]],
        new: list[str],
    ) -> tuple[list[bytes], list[bytes]]:
        """`names` without the files held back (`skip`) and those over the limit, which
        are added to `held` and `new`; returns (the rest, the ones over the limit). Only
        the listed paths are stat'ed, with bytes paths: no decoding of each name."""
        limit = self.max_file or 0
        root = os.fsencode(self.workspace) + b"/"
        rest: list[bytes] = []
        over: list[bytes] = []
        for name in names:
            if name in skip:
                continue
            try:
                info = os.lstat(root + name)
            except OSError:  # gone (update-index --remove takes it out) or unreadable
                rest.append(name)
                continue
            if info.st_size > limit and stat.S_ISREG(info.st_mode):
                path = os.fsdecode(name)
                held[path] = (info.st_size, info.st_mtime_ns)
                new.append(path)
                over.append(name)
            else:
                rest.append(name)
        return rest, over

    def _stage_repositories(self, repos: list[bytes], cancel: CancelToken | None) -> None:
        """A nested repository new to our index is kept as its commit (a gitlink), as
        `git add` kept it. One with no commit yet is left out: `git add` failed the whole
        snapshot for it ("does not have a commit checked out"), and `update-index` dies
        of it too, dropping the others of its call, so after a failure each is tried
        alone (rare: once kept, a repository is no longer listed as new)."""
        names = b"".join(name + b"\0" for name in repos)
        if self.git(*UPDATE, input=names, cancel=cancel, check=False).returncode == 0:
            return
        for name in repos:
            self.git(*UPDATE, input=name + b"\0", cancel=cancel, check=False)

    def _held(self) -> dict[str, tuple[int, int]]:
        try:
            raw = _decode_held((self.dir / HELD).read_bytes())
        except (OSError, msgspec.DecodeError):
            return {}
        return {path: (size, mtime) for path, (size, mtime) in raw.items()}

    def _save_held(self, held: dict[str, tuple[int, int]]) -> None:
        (self.dir / HELD).write_bytes(msgspec.json.encode(held))
        (self.dir / "info" / "exclude").write_text(self._exclude_text())

    @contextlib.contextmanager
    def _cleaning(self) -> Iterator[None]:
        """A git process that fails while it writes (a full disk, a cancel, a timeout)
        leaves what it was writing: a temporary pack (`git add` streams a file over
        `core.bigFileThreshold` into one) or loose object, megabytes that nothing will
        ever use and that, on a full disk, made every later write fail, the session
        store's too. They are removed before the failure goes on. The caller holds
        `locked`, so no other git of ours is writing them."""
        try:
            yield
        except BaseException:
            self.discard_temporaries()
            raise

    def discard_temporaries(self) -> None:
        """Remove what git processes that did not finish left in the store (see
        `_cleaning`; the caller holds `locked`)."""
        objects = self.dir / "objects"
        for leftover in (
            *objects.glob("pack/tmp_*"),
            *objects.glob("pack/.tmp-*"),
            *objects.glob("??/tmp_obj_*"),
            *objects.glob("tmp_obj_*"),
            self.dir / "index.lock",
        ):
            leftover.unlink(missing_ok=True)

    @contextlib.contextmanager
    def locked(self, cancel: CancelToken | None = None) -> Iterator[None]:
        """Only one process at a time uses the index (sessions of one workspace share it).
        Waiting for another session's snapshot ends with a cancel (raises Cancelled)."""
        fd = self._flock("lock", exclusive=True, cancel=cancel)
        try:
            yield
        finally:
            os.close(fd)

    def using(self, cancel: CancelToken | None = None) -> int:
        """Hold the store in use until the descriptor returned is closed: from the first
        object a checkpoint writes to its row in the session store, its objects are
        referred to by nothing a prune can see. Many hold it at once; a prune waits for
        none of them (`pruning`), and they wait for a prune that runs."""
        return self._flock("use", exclusive=False, cancel=cancel)

    @contextlib.contextmanager
    def pruning(self) -> Iterator[bool]:
        """The store alone (True), or in use by a snapshot or a file tool (False: no
        prune now; the next session's end tries again)."""
        import fcntl

        self.ensure()
        fd = os.open(self.dir / "use", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)

    def _flock(self, name: str, *, exclusive: bool, cancel: CancelToken | None) -> int:
        import fcntl

        self.ensure()
        fd = os.open(self.dir / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            while True:
                try:
                    fcntl.flock(fd, mode | (fcntl.LOCK_NB if cancel else 0))
                    return fd
                except BlockingIOError:
                    assert cancel is not None
                    if cancel.wait(LOCK_POLL):
                        raise Cancelled(cancel.reason) from None
        except BaseException:
            os.close(fd)
            raise

    def git(
        self,
        *args: str,
        check: bool = True,
        cancel: CancelToken | None = None,
        index: Path | None = None,
        input: bytes | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run git on our store (on `index` instead of our index); `cancel` kills it (then
        Cancelled is raised; what a killed `git update-index` leaves, its index lock too,
        is removed by `_cleaning`)."""
        proc = self._start(args, cancel, index=index, stdin=input is not None)
        return self._wait(proc, args, input, check=check, cancel=cancel)

    def _side_by_side(self, *commands: tuple[str, ...], cancel: CancelToken | None) -> list[bytes]:
        """The output of git commands run at once: the two listings of `stage` each walk
        their half of the work tree, so the turn waits for the longer one, not for both
        (bench_undo, 10,000 files: ~5 ms less wall time before a command, the same CPU).
        A failure or a cancel of one kills the others."""
        started: list[subprocess.Popen[bytes]] = []
        try:
            for args in commands:
                started.append(self._start(args, cancel, index=None, stdin=False))
            return [
                self._wait(proc, args, None, check=True, cancel=cancel).stdout
                for proc, args in zip(started, commands, strict=True)
            ]
        finally:
            for proc in started:
                if proc.returncode is None:
                    proc.kill()
                    proc.communicate()

    def _start(
        self, args: tuple[str, ...], cancel: CancelToken | None, *, index: Path | None, stdin: bool
    ) -> subprocess.Popen[bytes]:
        self.ensure()
        env = self.environment()
        if index is not None:
            env = {**env, "GIT_INDEX_FILE": str(index)}
        git = hostgit.program(self.workspace)
        if git is None:
            raise StoreError("git is not installed: commands' changes cannot be kept")
        try:
            return subprocess.Popen(
                [git, *args],
                cwd=self.workspace,
                env=env,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=cancel is not None,  # what it starts dies with it
            )
        except FileNotFoundError as exc:
            raise StoreError("git is not installed: commands' changes cannot be kept") from exc

    def _wait(
        self,
        proc: subprocess.Popen[bytes],
        args: tuple[str, ...],
        input: bytes | None,
        *,
        check: bool,
        cancel: CancelToken | None,
    ) -> subprocess.CompletedProcess[bytes]:
        forget = cancel.on_cancel(lambda: _kill_group(proc)) if cancel is not None else None
        try:
            stdout, stderr = proc.communicate(input, timeout=GIT_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            proc.communicate()
            raise StoreError(f"git {args[0]} took over {GIT_TIMEOUT:g} s") from exc
        finally:
            if forget is not None:
                forget()
        if cancel is not None and cancel.is_cancelled():
            raise Cancelled(cancel.reason)
        result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        if check and result.returncode != 0:
            why = result.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
            raise StoreError(f"git {args[0]} failed: {why[0]}")
        return result

    def environment(self) -> dict[str, str]:
        """Nothing of the user's or the repository's git setup reaches these calls."""
        if self._env is not None:
            return self._env
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.dir),
            "LC_ALL": "C",
            "GIT_DIR": str(self.dir),
            "GIT_WORK_TREE": str(self.workspace),
            "GIT_INDEX_FILE": str(self.dir / "index"),
            **hostgit.ISOLATED,
            "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD),
        }
        add_git_safety(env, git_ceiling(self.workspace))
        settings = [
            ("core.hooksPath", os.devnull),
            ("core.autocrlf", "false"),
            ("core.safecrlf", "false"),
            ("core.symlinks", "true"),
            ("core.fileMode", "true"),
            ("core.ignoreCase", "false"),
            ("core.attributesFile", os.devnull),
            ("core.excludesFile", self._excludes()),
            ("core.untrackedCache", "true"),
            ("core.splitIndex", "true"),
            ("core.bigFileThreshold", "1m"),
            ("gc.auto", "0"),
            ("maintenance.auto", "false"),
            ("advice.addEmbeddedRepo", "false"),
        ]
        count = int(env["GIT_CONFIG_COUNT"])
        for offset, (key, value) in enumerate(settings):
            env[f"GIT_CONFIG_KEY_{count + offset}"] = key
            env[f"GIT_CONFIG_VALUE_{count + offset}"] = value
        env["GIT_CONFIG_COUNT"] = str(count + len(settings))
        self._env = env
        return env

    def _excludes(self) -> str:
        """The repository's own exclude file (patterns only), when the workspace is the
        top of a repository whose `.git` is a folder."""
        top = repository_top(self.workspace)
        exclude = self.workspace / ".git" / "info" / "exclude"
        if top == self.workspace and exclude.is_file() and not exclude.is_symlink():
            return str(exclude)
        return os.devnull

    def ensure(self) -> None:
        """Create the git directory (by hand: no `git init`, so no templates or hooks)."""
        if self._ready:
            return
        if (self.dir / "HEAD").exists():
            exclude = self.dir / "info" / "exclude"
            if exclude.read_text() != self._exclude_text():  # made by an older CodeCoder
                exclude.write_text(self._exclude_text())
            self._forget_copies_of_dead_sessions()
            self._ready = True
            return
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for sub in ("objects", "refs/heads", "refs/tags", "info"):
            (self.dir / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
        (self.dir / "info" / "attributes").write_text(ATTRIBUTES)
        (self.dir / "info" / "exclude").write_text(self._exclude_text())
        (self.dir / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
        (self.dir / "workspace").write_text(str(self.workspace) + "\n")
        (self.dir / "HEAD").write_text("ref: refs/heads/checkpoints\n")
        self._ready = True

    def _forget_copies_of_dead_sessions(self) -> None:
        """Index copies (`index_now`) a killed session left: its process is gone."""
        for copy in self.dir.glob("index.before-*"):
            pid = copy.name.split("-")[1]
            if pid.isdigit() and not _alive(int(pid)):
                copy.unlink(missing_ok=True)

    def _exclude_text(self) -> str:
        """EXCLUDES, and our own folders where the workspace holds them (a session in the
        home folder): the session store and this object store would otherwise be
        snapshotted, each snapshot adding to what the next one reads."""
        lines = [EXCLUDES]
        for folder in (paths.data_dir(), self.dir):
            try:
                rel = Path(os.path.realpath(folder)).relative_to(os.path.realpath(self.workspace))
            except ValueError:
                continue
            if rel.parts:
                lines.append("/" + _glob_escape(rel.as_posix()) + "/\n")
        # the files held back; a name with a newline cannot be a pattern (`stage` skips it)
        held = (path for path in sorted(self._held()) if "\n" not in path)
        lines += ("/" + _glob_escape(path) + "\n" for path in held)
        return "".join(lines)


def _glob_escape(path: str) -> str:
    """A path as a gitignore pattern that matches only itself (after a leading /)."""
    escaped = "".join("\\" + c if c in "*?[]\\" else c for c in path)
    trimmed = escaped.rstrip(" ")  # git drops trailing blanks unless escaped
    return trimmed + "\\ " * (len(escaped) - len(trimmed))


def _size_and_time(path: Path) -> tuple[int, int] | None:
    """A regular file's size and mtime (None: gone, a link, a folder)."""
    try:
        info = path.lstat()
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns) if stat.S_ISREG(info.st_mode) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _blob_id(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(f"blob {len(data)}\0".encode() + data, usedforsecurity=False).hexdigest()


def _changed(raw: bytes) -> tuple[list[bytes], list[bytes]]:
    """The paths `git diff-files -z --raw` lists, changed (in stat only, too) and, apart,
    deleted: those are taken out with `--force-remove`, since `update-index --remove`
    dies of a path beyond a symlink (a folder the command replaced by a link), which git
    lists as deleted."""
    fields = raw.split(b"\0")
    changed: list[bytes] = []
    gone: list[bytes] = []
    for index in range(0, len(fields) - 1, 2):
        (gone if fields[index].endswith(b"D") else changed).append(fields[index + 1])
    return changed, gone


def _state(mode: str, sha: str) -> FileState | None:
    if set(sha) == {"0"}:
        return None
    return FileState(mode, sha)
