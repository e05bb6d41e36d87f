"""The accessibility pass of the browser tests: axe-core (vendored from npm by `make vendor` into
tests/console/vendor/axe.min.js, never served) run in the page, WCAG 2 A and AA rules, serious and critical only."""

from __future__ import annotations

import json
from pathlib import Path

AXE = Path(__file__).resolve().parent / "console" / "vendor" / "axe.min.js"
RULES = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def serious_violations(page, context: str = "document") -> list[dict]:
    """Violations of impact serious or critical in `context` (a CSS selector, or the whole document). The page must
    admit the injected script (a context with bypass_csp: the console's policy rightly refuses it otherwise)."""
    page.add_script_tag(path=str(AXE))
    return page.evaluate(
        """async ([context, rules]) => {
            const target = context === 'document' ? document : document.querySelector(context);
            const r = await axe.run(target, {runOnly: {type: 'tag', values: rules}, resultTypes: ['violations']});
            return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
              .map(v => ({id: v.id, impact: v.impact, help: v.help,
                          nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' — ' + n.failureSummary)}));
        }""", [context, RULES])


def assert_clean(page, where: str, context: str = "document") -> None:
    found = serious_violations(page, context)
    assert found == [], f"{where}: " + json.dumps(found, indent=2)
