"""A loopback Hugging Face Hub for tests: the part of the Hub's HTTP API that huggingface_hub 2.4 uses.

Enough for ``HfApi.create_repo`` / ``create_branch`` / ``upload_folder`` / ``create_commit`` / ``list_repo_files`` /
``model_info`` / ``repo_exists`` / ``whoami``, ``ModelCard.validate`` and, on the download side,
``hf_hub_download`` / ``snapshot_download``, so ``AutoModel.from_pretrained("org/name")``,
``SentenceTransformer("org/name")`` and ``PeftModel.from_pretrained(base, "org/adapter")`` run against it unchanged.

Written from the requests the client makes (``huggingface_hub/hf_api.py``, ``_commit_api.py``, ``file_download.py``):

* ``POST /api/repos/create``: 200 ``{"url"}``, or 409 with ``"url"`` when the repo exists (as the Hub does;
  ``create_repo(exist_ok=True)`` reads that field).
* ``POST /api/{type}s/{id}/preupload/{rev}``: every file ``uploadMode: "regular"`` (so no LFS or Xet transfer is ever
  attempted; test files are small), ``oid`` = the git blob id of the current file, which lets the client skip
  unchanged files as it does against the Hub.
* ``POST /api/{type}s/{id}/commit/{rev}``: ndjson lines ``header`` / ``file`` (base64) / ``deletedFile`` /
  ``deletedFolder``; ``lfsFile`` is refused (never requested, see preupload).
* ``GET /api/{type}s/{id}[/revision/{rev}]``, ``/tree/{rev}[/{path}]``, ``/refs``; ``POST .../branch/{name}``.
* ``HEAD``/``GET /{id}/resolve/{rev}/{path}`` with ``X-Repo-Commit`` and ``ETag``; misses are 404 with
  ``X-Error-Code`` ``RepoNotFound`` / ``RevisionNotFound`` / ``EntryNotFound``, which the client turns into the
  exceptions transformers relies on when it probes optional files (``adapter_config.json``, sharded indexes, ...).
* ``GET /api/whoami-v2``, ``POST /api/validate-yaml`` (parses the card's YAML front matter).

Repositories live in memory, one immutable snapshot per commit. Every request is recorded in ``HubServer.requests``
so tests can assert what was (not) sent. Not implemented: LFS/Xet, pull requests, pagination (one page), gated or
disabled repos, tags.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

USER = "hyte-tester"
REPO_TYPES = ("model", "dataset", "space")
_REPO_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
_COMMIT_ID = re.compile(r"[0-9a-f]{40}")


def git_blob_id(content: bytes) -> str:
    """The git object id of a file: what the Hub reports as a regular file's oid and ETag."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


class HubError(Exception):
    """An error answer: HTTP status, X-Error-Code (when the client dispatches on it) and a message."""

    def __init__(self, status: int, message: str, code: str | None = None, **extra):
        super().__init__(message)
        self.status, self.message, self.code, self.extra = status, message, code, extra


@dataclass
class Commit:
    oid: str
    files: dict[str, bytes]  # the whole tree after this commit: path -> content
    message: str


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    branches: dict[str, str] = field(default_factory=dict)  # name -> commit oid
    commits: dict[str, Commit] = field(default_factory=dict)

    def resolve(self, revision: str) -> Commit:
        """A branch name or a full commit id -> that commit (404 RevisionNotFound otherwise)."""
        oid = self.branches.get(revision, revision if _COMMIT_ID.fullmatch(revision) else None)
        if oid not in self.commits:
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return self.commits[oid]


class HubServer(ThreadingHTTPServer):
    """The loopback hub. ``base`` is the value for HF_ENDPOINT; ``requests`` lists ``(method, path)`` received."""

    daemon_threads = True

    def __init__(self, port: int = 0):
        super().__init__(("127.0.0.1", port), _Handler)
        self.base = f"http://127.0.0.1:{self.server_address[1]}"
        self.repos: dict[tuple[str, str], Repo] = {}
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()  # handler threads share the repos

    def start(self) -> HubServer:
        threading.Thread(target=self.serve_forever, name="loopback-hub", daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def repo(self, repo_type: str, repo_id: str, authorized: bool) -> Repo:
        repo = self.repos.get((repo_type, repo_id))
        # Like the Hub: a private repo is indistinguishable from a missing one without credentials.
        if repo is None or (repo.private and not authorized):
            raise HubError(404 if authorized else 401, "Repository not found", "RepoNotFound")
        return repo

    # ------------------------------------------------------------------------------------------------------------
    # Operations (called under the lock)
    # ------------------------------------------------------------------------------------------------------------

    def create_repo(self, payload: dict) -> tuple[int, dict]:
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization') or USER}/{payload['name']}"
        url = f"{self.base}/{_REPO_PREFIX[repo_type]}{repo_id}"
        if (repo_type, repo_id) in self.repos:
            return 409, {"error": "You already created this model repo", "url": url}
        private = payload.get("visibility", "private" if payload.get("private") else "public") != "public"
        repo = Repo(repo_type, repo_id, private)
        # A new Hub repo starts with one commit holding .gitattributes.
        self._add_commit(repo, "main", {".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"},
                         "initial commit", parent=None)
        self.repos[(repo_type, repo_id)] = repo
        return 200, {"url": url, "name": repo_id, "id": uuid.uuid4().hex}

    def commit(self, repo: Repo, revision: str, lines: list[dict]) -> dict:
        parent = repo.resolve(revision)
        if revision not in repo.branches:
            raise HubError(400, f"Commits go to a branch; {revision!r} is not one")
        header = next((line["value"] for line in lines if line["key"] == "header"), None)
        if header is None:
            raise HubError(400, "The commit payload has no header line")
        if header.get("parentCommit") not in (None, parent.oid):
            raise HubError(412, "A commit has happened since the parent commit you gave")
        files = dict(parent.files)
        for line in lines:
            key, value = line["key"], line["value"]
            if key == "file":
                if value.get("encoding") != "base64":
                    raise HubError(400, f"Unsupported encoding {value.get('encoding')!r}")
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                if value["path"] not in files:
                    raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
                del files[value["path"]]
            elif key == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                files = {path: data for path, data in files.items() if not path.startswith(prefix)}
            elif key != "header":
                raise HubError(400, f"This loopback hub takes regular files only, not {key!r}")
        commit = self._add_commit(repo, revision, files, header.get("summary", ""), parent=parent.oid)
        url = f"{self.base}/{_REPO_PREFIX[repo.repo_type]}{repo.repo_id}/commit/{commit.oid}"
        return {"success": True, "commitOid": commit.oid, "commitUrl": url, "pullRequestUrl": None}

    @staticmethod
    def _add_commit(repo: Repo, branch: str, files: dict[str, bytes], message: str, parent: str | None) -> Commit:
        oid = hashlib.sha1(f"{parent}:{message}:{uuid.uuid4()}".encode()).hexdigest()
        repo.commits[oid] = Commit(oid, files, message)
        repo.branches[branch] = oid
        return repo.commits[oid]

    def tree(self, repo: Repo, revision: str, folder: str, recursive: bool) -> list[dict]:
        commit = repo.resolve(revision)
        prefix = f"{folder.strip('/')}/" if folder.strip("/") else ""
        entries: dict[str, dict] = {}
        for path, content in sorted(commit.files.items()):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix):].split("/")
            # Folders on the way to the file (all of them when recursive, only the first level otherwise). Their
            # oid stands in for a git tree id: the client only passes it through.
            for depth in range(1, len(parts) if recursive else min(2, len(parts))):
                folder_path = prefix + "/".join(parts[:depth])
                entries.setdefault(folder_path, {"type": "directory", "path": folder_path, "size": 0,
                                                 "oid": git_blob_id(folder_path.encode())})
            if recursive or len(parts) == 1:
                entries[path] = {"type": "file", "path": path, "oid": git_blob_id(content), "size": len(content)}
        if prefix and not entries:
            raise HubError(404, f"{folder} does not exist on {revision}", "EntryNotFound")
        return list(entries.values())

    def info(self, repo: Repo, revision: str) -> dict:
        commit = repo.resolve(revision)
        return {
            "_id": repo.repo_id, "id": repo.repo_id, "modelId": repo.repo_id, "author": repo.repo_id.split("/")[0],
            "sha": commit.oid, "private": repo.private, "disabled": False, "gated": False, "downloads": 0,
            "likes": 0, "tags": [], "siblings": [{"rfilename": path} for path in sorted(commit.files)],
            "lastModified": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z",
        }


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps the client's connections alive; every answer then needs a Content-Length (see _send).
    protocol_version = "HTTP/1.1"
    server: HubServer

    def log_message(self, format, *args):  # quiet: the request list is the log
        pass

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_POST(self):
        self._dispatch("POST")

    # ------------------------------------------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        # Segments are unquoted one by one: a revision such as "refs%2Fpr%2F1" stays one segment.
        segments = [unquote(part) for part in url.path.strip("/").split("/")]
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.lock:
            self.server.requests.append((method, url.path))
            try:
                self._route(method, segments, query, body)
            except HubError as error:
                self._send(error.status, {"error": error.message, **error.extra},
                           headers={"X-Error-Code": error.code, "X-Error-Message": error.message}
                           if error.code else None, head=method == "HEAD")

    @property
    def _authorized(self) -> bool:
        return self.headers.get("Authorization", "").startswith("Bearer hf_")

    def _require_auth(self) -> None:
        if not self._authorized:
            raise HubError(401, "Invalid credentials in Authorization header")

    def _route(self, method: str, segments: list[str], query: dict[str, str], body: bytes) -> None:
        server = self.server
        if segments[:1] == ["api"]:
            api = segments[1:]
            if method == "GET" and api == ["whoami-v2"]:
                self._require_auth()
                return self._send(200, {"type": "user", "name": USER, "fullname": "HyTE tester",
                                        "orgs": [{"name": "org"}],
                                        "auth": {"type": "access_token",
                                                 "accessToken": {"displayName": "fake", "role": "write"}}})
            if method == "POST" and api == ["repos", "create"]:
                self._require_auth()
                return self._send(*server.create_repo(json.loads(body)))
            if method == "POST" and api == ["validate-yaml"]:
                return self._send(*_validate_card(json.loads(body).get("content", "")))
            if len(api) >= 3 and api[0].rstrip("s") in REPO_TYPES:
                return self._repo_api(method, api[0].rstrip("s"), "/".join(api[1:3]), api[3:], query, body)
        else:
            repo_type = next((kind for kind, prefix in _REPO_PREFIX.items() if prefix
                              and segments[:1] == [prefix.rstrip("/")]), "model")
            rest = segments[1:] if repo_type != "model" else segments
            if method in ("GET", "HEAD") and len(rest) >= 5 and rest[2] == "resolve":
                return self._resolve(method, repo_type, "/".join(rest[:2]), rest[3], "/".join(rest[4:]))
        raise HubError(404, f"No route for {method} /{'/'.join(segments)}")

    def _repo_api(self, method: str, repo_type: str, repo_id: str, rest: list[str], query: dict[str, str],
                  body: bytes) -> None:
        server = self.server
        repo = server.repo(repo_type, repo_id, self._authorized)
        action = rest[0] if rest else None
        if method == "GET" and action is None:
            return self._send(200, server.info(repo, "main"))
        if method == "GET" and action == "revision" and len(rest) == 2:
            return self._send(200, server.info(repo, rest[1]))
        if method == "GET" and action == "tree" and len(rest) >= 2:
            recursive = query.get("recursive", "false").lower() in ("1", "true")
            return self._send(200, server.tree(repo, rest[1], "/".join(rest[2:]), recursive))
        if method == "GET" and action == "refs":
            branches = [{"name": name, "ref": f"refs/heads/{name}", "targetCommit": oid}
                        for name, oid in repo.branches.items()]
            return self._send(200, {"branches": branches, "tags": [], "converts": []})
        if method == "POST" and action == "preupload" and len(rest) == 2:
            self._require_auth()
            files = repo.resolve(rest[1]).files
            answers = [{"path": item["path"], "uploadMode": "regular", "shouldIgnore": False,
                        "oid": git_blob_id(files[item["path"]]) if item["path"] in files else None}
                       for item in json.loads(body)["files"]]
            return self._send(200, {"files": answers, "commitOid": repo.resolve(rest[1]).oid})
        if method == "POST" and action == "commit" and len(rest) == 2:
            self._require_auth()
            lines = [json.loads(line) for line in body.splitlines() if line.strip()]
            return self._send(200, server.commit(repo, rest[1], lines))
        if method == "POST" and action == "branch" and len(rest) >= 2:
            self._require_auth()
            name = "/".join(rest[1:])
            if name in repo.branches:
                raise HubError(409, f"Branch {name} already exists")
            start = json.loads(body or b"{}").get("startingPoint") or "main"
            repo.branches[name] = repo.resolve(start).oid
            return self._send(200, {})
        raise HubError(404, f"No route for {method} {repo_type} {repo_id} {'/'.join(rest)}")

    def _resolve(self, method: str, repo_type: str, repo_id: str, revision: str, path: str) -> None:
        commit = self.server.repo(repo_type, repo_id, self._authorized).resolve(revision)
        if path not in commit.files:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
        content = commit.files[path]
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{git_blob_id(content)}"',
                   "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
        status = 200
        # Resumed downloads ask for "bytes=START-" (or START-END).
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match:
            start = int(match[1])
            end = int(match[2]) if match[2] else len(content) - 1
            headers["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
            content, status = content[start:end + 1], 206
        self._send(status, content, headers=headers, head=method == "HEAD")

    def _send(self, status: int, payload, headers: dict[str, str] | None = None, head: bool = False) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status, HTTPStatus(status).phrase)
        if not isinstance(payload, bytes):
            self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)


def _validate_card(content: str) -> tuple[int, dict]:
    """The /api/validate-yaml answer: 400 with errors when the README's YAML front matter is not a YAML mapping."""
    match = re.match(r"^---\s*\n(.*?)\n---\s*\n", content, flags=re.DOTALL)
    if not match:
        return 200, {"errors": [], "warnings": [{"message": "empty or missing yaml metadata in repo card"}]}
    try:
        metadata = yaml.safe_load(match[1])
    except yaml.YAMLError as error:
        return 400, {"errors": [{"message": f"invalid YAML: {error}"}], "warnings": []}
    if not isinstance(metadata, dict):
        return 400, {"errors": [{"message": "the YAML metadata must be a mapping"}], "warnings": []}
    return 200, {"errors": [], "warnings": []}
