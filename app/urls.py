"""Every URL the app links to is built here, so the base_url setting applies everywhere."""

from __future__ import annotations

from urllib.parse import quote


def snapshot_id(run_id: str, ordinal: int, index: int) -> str:
    """Public snapshot id: unguessable because it starts with the run's id."""
    return f"{run_id}-{ordinal}-{index}"


def parse_snapshot_id(value: str) -> tuple[str, int, int] | None:
    parts = value.split("-")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return parts[0], int(parts[1]), int(parts[2])


class Urls:
    def __init__(self, base_url: str = "") -> None:
        self.base = base_url.rstrip("/")

    def path(self, path: str) -> str:
        return f"{self.base}{path}"

    def home(self) -> str:
        return self.path("/")

    def static(self, name: str) -> str:
        return self.path(f"/static/{name}")

    def runs(self) -> str:
        return self.path("/runs")

    def run(self, run_id: str) -> str:
        return self.path(f"/runs/{run_id}")

    def compilation(self, run_id: str, ordinal: int) -> str:
        return self.path(f"/runs/{run_id}/c/{ordinal}")

    def snapshot(self, run_id: str, ordinal: int, index: int) -> str:
        return self.path(f"/runs/{run_id}/c/{ordinal}/s/{index}")

    def snapshot_raw(self, run_id: str, ordinal: int, index: int) -> str:
        return self.snapshot(run_id, ordinal, index) + "/raw"

    def artifact(self, run_id: str, ordinal: int, artifact_pk: int) -> str:
        return self.path(f"/runs/{run_id}/c/{ordinal}/files/{artifact_pk}")

    def source(self, run_id: str, path: str) -> str:
        return self.path(f"/runs/{run_id}/src/{quote(path)}")

    def diff(self, left: str, right: str) -> str:
        return self.path(f"/diff/{left}..{right}")

    def json(self, url: str) -> str:
        """The .json twin of a page URL."""
        path, _, query = url.partition("?")
        path = path.rstrip("/") or self.base
        twin = (path + "/index.json") if path in ("", self.base) else path + ".json"
        return twin + (f"?{query}" if query else "")
