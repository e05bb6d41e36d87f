"""A host uid per tenant (or per workspace the service token opened), from a reserved range.

Why: every limit the kernel counts per user — RLIMIT_NPROC above all — and every file permission on disk is
shared by whoever runs as the same uid. With one `nobody` for everyone, one organization holding its process
quota made every other organization's next command fail ("bwrap: Can't fork"), and a wall that failed would
have left every workspace readable. Here each tenant's commands run as a uid no other tenant has, and its
workspaces are owned by it with mode 0700.

The map is kept in `<root>/uids.json` (written whole, then renamed), so a tenant keeps its uid across restarts;
a uid is never given to another key, even after its workspaces are closed (files a killed command left behind
can never become someone else's). No table of tenants is needed: the first command of a new key allocates.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path


class Exhausted(RuntimeError):
    """Every uid of the range is taken."""


class UidMap:
    def __init__(self, path: Path, base: int, count: int) -> None:
        self.path = path
        self.base = base
        self.count = count
        self._lock = threading.Lock()
        self._map: dict[str, int] = {}
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        if isinstance(data, dict):
            self._map = {str(k): int(v) for k, v in data.items()
                         if isinstance(v, int) and base <= v < base + count}

    def uid(self, key: str) -> int:
        with self._lock:
            found = self._map.get(key)
            if found is not None:
                return found
            taken = set(self._map.values())
            candidate = self.base + len(self._map)
            while candidate in taken:
                candidate += 1
            if candidate >= self.base + self.count:
                raise Exhausted(f"No free uid is left in {self.base}..{self.base + self.count - 1} "
                                "(SANDBOXD_UID_BASE / SANDBOXD_UID_COUNT).")
            self._map[key] = candidate
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(self._map, sort_keys=True))
            os.replace(temporary, self.path)
            return candidate
