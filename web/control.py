"""The dashboard's only way to the cluster: the supervisor's HTTP + JSON control API (docs/control-api.md)."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request


class ControlError(Exception):
    """The control API could not be reached or did not answer with JSON."""


class ControlClient:
    def __init__(self, control_url: str, *, timeout: float = 5.0):
        self.base = control_url.rstrip("/")
        self.timeout = timeout

    def _call(self, method: str, path: str, body: dict | None = None, timeout: float | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"} if data else {})
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:  # the API answers errors as JSON with a 4xx/5xx status
            try:
                answer = json.loads(exc.read() or b"{}")
            except (ValueError, OSError, http.client.HTTPException):
                answer = {}
            if isinstance(answer, dict) and "ok" in answer:
                return answer
            raise ControlError(f"control API {method} {path}: HTTP {exc.code}") from exc
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            raise ControlError(f"control API at {self.base} not reachable: {exc}") from exc

    def state(self, log: int = 20) -> dict:
        """The cluster state, each node's log cut to its newest `log` entries."""
        return self._call("GET", f"/api/state?log={int(log)}")

    def events(self, after: int, limit: int = 5000) -> dict:
        return self._call("GET", f"/api/events?after={int(after)}&limit={int(limit)}")

    def post(self, path: str, body: dict | None = None, timeout: float | None = None) -> dict:
        return self._call("POST", path, body or {}, timeout)
