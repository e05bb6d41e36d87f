"""The accessibility pass of the browser tests: axe-core (vendored from npm by `make vendor` into
tests/console/vendor/axe.min.js, never served) run in the page, WCAG 2 A and AA rules, serious and critical only."""

from __future__ import annotations

import json
from pathlib import Path

AXE = Path(__file__).resolve().parent / "console" / "vendor" / "axe.min.js"
RULES = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

_SERIOUS = """(r) => r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
  .map(v => ({id: v.id, impact: v.impact, help: v.help,
              nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' — ' + n.failureSummary)}))"""


def with_axe(context) -> None:
    """axe-core in every page the browser context opens, evaluated once per document by the browser (an init
    script) instead of sent from the test and parsed again for every page: adding the 650 kB script tag was about
    as long as axe's run itself, page after page (measured over the console's every-page pass)."""
    context.add_init_script(path=str(AXE))


def serious_violations(page, context: str = "document") -> list[dict]:
    """Violations of impact serious or critical in `context` (a CSS selector, or the whole document). The page must
    admit the injected script (a context with bypass_csp: the console's policy rightly refuses it otherwise), or
    have axe already (with_axe)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate(
        """async ([context, rules]) => {
            const target = context === 'document' ? document : document.querySelector(context);
            const r = await axe.run(target, {runOnly: {type: 'tag', values: rules}, resultTypes: ['violations']});
            return (""" + _SERIOUS + """)(r);
        }""", [context, RULES])


def assert_clean(page, where: str, context: str = "document") -> None:
    found = serious_violations(page, context)
    assert found == [], f"{where}: " + json.dumps(found, indent=2)


# ------------------------------------------------------------------ both themes on one loaded page
#
# A light and a dark pass that each load every page and run every rule did the same work twice: the console's
# themes are CSS only (console.css's prefers-color-scheme block and :root[data-theme=dark] change colours and
# nothing else; theme.js, the only script that reads the scheme, sets the toggle's aria-pressed and data-theme).
# So the page is loaded and checked with every rule in light, the browser is then switched to dark on the same
# document (page.emulate_media: the media query and theme.js's change listener apply as for a person switching),
# and in dark only the rules whose answer depends on colours run: axe's own category for them, "cat.color"
# (color-contrast and link-in-text-block among our WCAG A/AA tags; color-contrast-enhanced is AAA and off).
# Every other rule reads the DOM, ARIA, text and what is rendered where — the same in both themes, which is not
# assumed but checked on each page: a fingerprint of every element (tag, attributes, own text, display,
# visibility, whether fully transparent, overflow, box, ::before/::after content) is taken in light and in dark.
# An element whose only change is the state theme.js writes (aria-pressed on the toggle) gets every rule again in
# dark; any other difference (an element shown only in dark, a changed text, a live page that moved) runs every
# rule on the whole page in dark, as a dark pass of its own did.

_FINGERPRINT = """(root) => {
    const out = [];
    for (const el of [root, ...root.querySelectorAll('*')]) {
        const s = getComputedStyle(el), r = el.getBoundingClientRect();
        const before = getComputedStyle(el, '::before').content, after = getComputedStyle(el, '::after').content;
        const attrs = [...el.attributes].map(a => a.name + '=' + a.value).sort();
        const text = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('');
        out.push({attrs, render: [el.tagName, text, s.display, s.visibility, s.opacity === '0', s.overflowX,
                                  s.overflowY, Math.round(r.x), Math.round(r.y), Math.round(r.width),
                                  Math.round(r.height), before, after].join('|')});
    }
    return out;
}"""

# Attributes a theme switch may change on an element without changing any other element's answer (a state of the
# element itself, read by the rules that run on that element); such an element gets every rule again in dark.
_THEME_STATE = ["aria-pressed"]


def _target(context: str) -> str:
    return "document.documentElement" if context == "document" else f"document.querySelector({json.dumps(context)})"


def serious_violations_in_both_themes(page, context: str = "document") -> dict[str, object]:
    """The page, loaded in its context's light scheme, checked with every rule in light and the colour rules (plus
    what the fingerprint says changed) in dark, then switched back to light. Returns {"light": [...],
    "dark": [...], "dark_rules": "colour" | "colour + every rule on N elements" | "every rule: <why>",
    "background": {scheme: the root's background colour}}."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    light = page.evaluate(
        """async ([context, rules]) => {
            const root = """ + _target(context) + """;
            window.__a11yLight = (""" + _FINGERPRINT + """)(root);
            const r = await axe.run(root === document.documentElement ? document : root,
                                    {runOnly: {type: 'tag', values: rules}, resultTypes: ['violations'],
                                     iframes: false});
            return {found: (""" + _SERIOUS + """)(r), background: getComputedStyle(document.documentElement).backgroundColor,
                    dark: matchMedia('(prefers-color-scheme: dark)').matches};
        }""", [context, RULES])
    assert not light["dark"], "the page must be loaded in the light scheme"
    page.emulate_media(color_scheme="dark")
    try:
        dark = page.evaluate(
            """async ([context, rules, state]) => {
                // The media query's change event (theme.js's listener) fires in the next rendering step: wait two.
                await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
                const root = """ + _target(context) + """;
                const before = window.__a11yLight, now = (""" + _FINGERPRINT + """)(root);
                const all = [root, ...root.querySelectorAll('*')];
                let whole = null; const elements = [];
                if (now.length !== before.length) whole = `${before.length} elements in light, ${now.length} in dark`;
                for (let i = 0; !whole && i < now.length; i++) {
                    if (now[i].render !== before[i].render) { whole = `${before[i].render} → ${now[i].render}`; break; }
                    const a = before[i].attrs.filter(x => !state.includes(x.split('=')[0]));
                    const b = now[i].attrs.filter(x => !state.includes(x.split('=')[0]));
                    if (a.join('\\n') !== b.join('\\n')) { whole = `${all[i].tagName} ${a} → ${b}`; break; }
                    if (now[i].attrs.join('\\n') !== before[i].attrs.join('\\n')) elements.push(all[i]);
                }
                const target = root === document.documentElement ? document : root;
                const tags = {runOnly: {type: 'tag', values: rules}, resultTypes: ['violations'], iframes: false};
                let found, ran;
                if (whole) {
                    found = (""" + _SERIOUS + """)(await axe.run(target, tags));
                    ran = 'every rule: ' + whole.slice(0, 300);
                } else {
                    const colour = axe.getRules(rules).filter(r => r.tags.includes('cat.color')).map(r => r.ruleId);
                    if (colour.length === 0) throw new Error('axe has no cat.color rule among ' + rules);
                    found = (""" + _SERIOUS + """)(await axe.run(target, {
                        runOnly: {type: 'rule', values: colour}, resultTypes: ['violations'], iframes: false}));
                    ran = 'colour (' + colour.join(', ') + ')';
                    if (elements.length) {
                        found = found.concat((""" + _SERIOUS + """)(await axe.run({include: elements}, tags)));
                        ran += ` + every rule on ${elements.length} element(s) theme.js changed`;
                    }
                }
                return {found, ran, background: getComputedStyle(document.documentElement).backgroundColor,
                        dark: matchMedia('(prefers-color-scheme: dark)').matches};
            }""", [context, RULES, _THEME_STATE])
    finally:
        page.emulate_media(color_scheme="light")
    assert dark["dark"], "the browser did not switch the page to the dark scheme"
    return {"light": light["found"], "dark": dark["found"], "dark_rules": dark["ran"],
            "background": {"light": light["background"], "dark": dark["background"]}}


def assert_clean_in_both_themes(page, where: str, context: str = "document") -> None:
    result = serious_violations_in_both_themes(page, context)
    found = {scheme: result[scheme] for scheme in ("light", "dark") if result[scheme]}
    assert found == {}, f"{where} (dark: {result['dark_rules']}): " + json.dumps(found, indent=2)
