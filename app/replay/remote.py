"""A compilation read from an irlens server (`irlens replay --server URL`): its page's .json twin gives
the dumps' banners, metadata and diagnostics; each dump's text comes from its /raw URL when needed."""

from __future__ import annotations

from urllib.parse import urljoin

import httpx

from app.replay.plan import Dump
from app.replay.replay import Source


def server_source(client: httpx.Client, server: str, path: str) -> Source:
    """`path` is the compilation's URL path (`/runs/RUN/c/N`, the server's base URL included)."""
    page = client.get(f"{server}{path}.json")
    page.raise_for_status()
    data = page.json()
    dumps = [Dump(s["index"], s["kind"], s["when"], s["pass"], s.get("pass_arg"), s.get("pass_options"),
                  s.get("scope"), bool(s.get("failed"))) for s in data.get("snapshots", [])]
    raw = {s["index"]: s["raw_url"] for s in data.get("snapshots", [])}
    errors = [d["message"] for d in data.get("diagnostics") or [] if d.get("severity") == "error"]

    def text(index: int) -> str:
        response = client.get(urljoin(server + "/", raw[index]))  # raw URLs carry the server's base URL
        response.raise_for_status()
        return response.text

    return Source(f"{data['run']}-{data['id']}", data.get("triton_version"), data.get("target"),
                  data.get("metadata"), {key: data.get(key) for key in ("num_warps", "num_stages", "num_ctas")},
                  data.get("status", "ok"),
                  (errors[0] if errors else data.get("status_reason")) if data.get("status") == "failed" else None,
                  dumps, text)
