"""Numbers read from requests: ASCII digits only (agenticos.strings.digits_only). `str.isdigit()` is true of '³' and
'①', which `int()` refuses, so a check with it let them through to a 500 (the audit log's `?actor=³`, found by the
fuzz test); this holds every module of the product to the one check."""

from __future__ import annotations

import re
from pathlib import Path

from agenticos.strings import digits_only

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ["agenticos", "agents", "calls", "capabilities", "channelbots", "config", "console", "embeds", "evals",
           "governance", "identity", "interop", "knowledge", "media", "notifications", "sandboxd", "triggers",
           "workspaces"]


def test_digits_only_is_what_int_reads_in_ascii():
    assert digits_only("0") and digits_only("12345")
    for text in ("", "³", "①", "١٢", "１２", "12a", "-1", " 1", "1.5"):
        assert not digits_only(text), text


def test_no_module_checks_a_number_with_isdigit_alone():
    offenders = []
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "agenticos" / "strings.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                # Where isdigit() is used, isascii() of the same text guards it on the line (sandboxd and the
                # settings cannot import the kernel's helper); agenticos/strings.py is the helper.
                if re.search(r"\.isdigit\(\)", line) and "isascii()" not in line:
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == [], "use agenticos.strings.digits_only:\n" + "\n".join(offenders)
