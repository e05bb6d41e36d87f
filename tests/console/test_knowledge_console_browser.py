"""Knowledge as a person sets it up, in Debian's chromium against daphne and a real Celery worker, at 1440 and
390 px: a builder opens Knowledge from the navigation, creates a collection, uploads a PDF with the button, drops a
Markdown file and pastes text, watches each become "Ready" with its passages, sees a broken PDF fail with the
reason and ingest it again, searches as they type and reads the citation with its page, then binds the collection
in the Builder's Knowledge card, which first warned that nothing was bound. A viewer reads with no upload or
delete; an outsider gets 404 — and no page shows a console error."""

from __future__ import annotations

import pytest

from agents.models import Agent
from knowledge.models import Collection, Document
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import TIMEOUT
from tests.console.test_channels_console_browser import watch
from tests.knowledge import files

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def fits(page) -> bool:
    """Nothing wider than the window: no sideways scrolling at 390 px."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def drop(page, selector: str, name: str, text: str) -> None:
    transfer = page.evaluate_handle(
        "([name, text]) => { const t = new DataTransfer(); t.items.add(new File([text], name)); return t; }",
        [name, text])
    page.dispatch_event(selector, "drop", {"dataTransfer": transfer})


def paste(page, text: str) -> None:
    page.evaluate("""(text) => { const t = new DataTransfer(); t.setData('text/plain', text);
        document.body.dispatchEvent(new ClipboardEvent('paste', {clipboardData: t, bubbles: true})); }""", text)


def ready_row(page, name: str):
    row = page.locator("[data-document]", has=page.locator("[data-doc-name]", has_text=name))
    row.locator('[data-doc-status]:text("Ready")').wait_for()
    return row


@pytest.mark.parametrize("width", [1440, 390])
def test_a_builder_sets_up_knowledge_and_binds_it_in_the_builder(live_server_url, browser, tmp_path, width):
    org = factories.organization(name="Acme")
    builder = factories.member(org, "builder", email=f"kn-builder-{width}@example.com", password=PASSWORD)
    factories.member(org, "viewer", email=f"kn-viewer-{width}@example.com", password=PASSWORD)
    factories.member(factories.organization(name="Other"), "owner", email=f"kn-out-{width}@example.com",
                     password=PASSWORD)
    agent = factories.published_agent(org, builder, name="Helper", capabilities=[{"id": "knowledge"}])
    base = live_server_url

    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, builder.email)
    if width < 821:
        page.get_by_role("button", name="Menu").click()
    page.locator("#sidenav").get_by_role("link", name="Knowledge").click()
    page.wait_for_url(f"{base}/knowledge/")
    page.get_by_text("No collections yet.").wait_for()

    form = page.locator("[data-collection-create]")
    form.get_by_label("Name").fill("Handbook")
    form.get_by_label("Description").fill("How we work")
    form.locator("[data-collection-submit]").click()
    collection = None
    page.wait_for_url(f"{base}/knowledge/*/")
    collection = Collection.objects.get(organization=org)
    assert page.get_by_role("heading", name="Handbook").is_visible()

    pdf = tmp_path / "policy.pdf"
    pdf.write_bytes(files.pdf(["Vacation is 25 days a year.", "Parking is free for cyclists on Fridays."]))
    page.locator("[data-upload-input]").set_input_files(str(pdf))
    pdf_row = ready_row(page, "policy.pdf")
    assert pdf_row.locator("[data-doc-chunks]").inner_text() != "0"
    drop(page, "[data-upload]", "notes.md", "# Notes\nThe canteen opens at noon.")
    ready_row(page, "notes.md")
    paste(page, "Visitors sign in at the front desk.")
    ready_row(page, "pasted-")

    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 this is not a PDF at all")
    page.locator("[data-upload-input]").set_input_files(str(broken))
    bad = page.locator("[data-document]", has=page.locator("[data-doc-name]", has_text="broken.pdf"))
    bad.locator('[data-doc-status]:text("Failed")').wait_for()
    assert bad.locator("[data-doc-error]").inner_text().strip()

    page.get_by_label("Search this collection").fill("parking cyclists")
    hit = page.locator("[data-hit-citation]").first
    hit.wait_for()
    assert hit.inner_text() == "policy.pdf, page 2"
    assert fits(page)
    page.screenshot(path=str(ARTIFACTS / f"knowledge-collection-{width}.png"), full_page=True)

    bad.locator("[data-doc-reingest]").click()
    page.get_by_text("broken.pdf is being read again.").wait_for()
    assert Document.objects.filter(collection=collection).count() == 4

    page.goto(f"{base}/agents/{agent.pk}/#cap-knowledge")
    card = page.locator("#cap-knowledge")
    card.locator("[data-no-collection-warning]").wait_for()
    page.screenshot(path=str(ARTIFACTS / f"builder-knowledge-none-{width}.png"), full_page=False)
    card.get_by_label("Handbook").check()
    page.locator("[data-toolbox-save]").click()
    page.locator('[data-toolbox-status="saved"]').wait_for()
    assert Agent.objects.get(pk=agent.pk).draft_spec["collection_ids"] == [str(collection.pk)]
    page.reload()
    page.locator("#cap-knowledge [data-bound-collections]").wait_for()
    assert "Searches: Handbook." in page.locator("#cap-knowledge [data-bound-collections]").inner_text()
    assert fits(page)
    page.locator("#cap-knowledge").screenshot(path=str(ARTIFACTS / f"builder-knowledge-picker-{width}.png"))

    viewer = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    viewer.set_default_timeout(TIMEOUT)
    viewer_errors = watch(viewer)
    sign_in(viewer, base, f"kn-viewer-{width}@example.com")
    viewer.goto(f"{base}/knowledge/{collection.pk}/")
    ready_row(viewer, "policy.pdf")
    assert viewer.locator("[data-upload]").count() == 0 and viewer.locator("[data-doc-delete]").count() == 0

    outsider = browser.new_context().new_page()
    outsider.set_default_timeout(TIMEOUT)
    sign_in(outsider, base, f"kn-out-{width}@example.com")
    assert outsider.goto(f"{base}/knowledge/{collection.pk}/").status == 404
    outsider.goto(f"{base}/knowledge/")
    assert "Handbook" not in outsider.content()
    assert errors == [] and viewer_errors == []
