"""web_fetch (local): pages as Markdown, images as images, documents as text, SSRF and domain filters."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from pydantic_ai.messages import BinaryContent

from agents.spec import CapabilityBinding
from capabilities import registry
from capabilities.web_fetch.capability import WebFetchConfig, binding_problems
from tests.capabilities.helpers import spec
from tests.tools.helpers import run_sync
from tests.tools.pdfs import make_pdf

ORG = "00000000-0000-0000-0000-000000000001"


@pytest.fixture(autouse=True)
def _granted(settings, tool_capabilities):
    settings.DEFAULT_GRANTED_SCOPES = [*settings.DEFAULT_GRANTED_SCOPES, "web:fetch"]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]


def fetch(urls: list[str], **config):
    return run_sync(spec({"id": "web_fetch", "config": config}), [("web_fetch", {"url": u}) for u in urls], org_id=ORG)


def test_an_html_page_comes_back_as_markdown_with_its_title_cut_at_the_limit(rest_api):
    outcome = fetch([f"{rest_api.base}/page.html?n=400"], max_content_chars=1000)
    (page,) = outcome.returns
    assert page["title"] == "Fake Docs"
    assert "\nContacts API\n============\n" in page["content"]  # the <h1> became a Markdown heading
    assert "`properties.email`" in page["content"]
    assert page["content"].endswith("[Content truncated]") and len(page["content"]) <= 1000 + 30


def test_markdown_and_json_are_returned_as_text(rest_api):
    outcome = fetch([f"{rest_api.base}/doc.md", f"{rest_api.base}/data.json"])
    markdown, data = outcome.returns
    assert markdown["content"] == "# Title\n\nSome *markdown*."
    assert data["content"].startswith("```json") and '"b": [' in data["content"]


def test_an_image_reaches_the_model_as_an_image(rest_api):
    outcome = fetch([f"{rest_api.base}/image.png"])
    (image,) = outcome.returns
    assert isinstance(image, BinaryContent) and image.media_type == "image/png"


def test_a_pdf_comes_back_as_its_extracted_text(rest_api):
    rest_api.state.pdf = make_pdf(["Quarterly revenue grew", "Second page text"])
    (doc,) = fetch([f"{rest_api.base}/doc.pdf"]).returns
    assert "Quarterly revenue grew" in doc["content"] and "Second page text" in doc["content"]


def test_a_pdf_longer_than_2000_pages_ends_with_a_note_naming_where_it_stopped(rest_api):
    rest_api.state.pdf = make_pdf([f"p{i}" for i in range(1, 2003)])
    (doc,) = fetch([f"{rest_api.base}/doc.pdf"], max_content_chars=200_000).returns
    assert "p2000" in doc["content"] and "p2001" not in doc["content"]
    assert "[Stopped reading at page 2001 of 2002" in doc["content"]


def test_unreadable_binary_is_a_retry_naming_what_arrived(rest_api):
    outcome = fetch([f"{rest_api.base}/blob.bin"])
    assert "application/zip (1024 bytes)" in outcome.retries[0]


def test_a_private_address_is_a_retryable_refusal_never_an_empty_page(settings, rest_api):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    outcome = fetch([f"{rest_api.base}/page.html"])
    assert "private or local address" in outcome.retries[0]
    assert rest_api.requests == []


def test_on_the_last_attempt_the_refusal_becomes_the_result(settings):
    outcome = fetch(["http://169.254.169.254/latest/"] * 3)
    assert len(outcome.retries) == 2
    assert outcome.returns[0].startswith("This call failed and will not be retried")


def test_a_redirect_to_the_metadata_address_is_refused(rest_api):
    outcome = fetch([f"{rest_api.base}/redirect?to=http://169.254.169.254/latest/"])
    assert "cloud metadata" in outcome.retries[0]


def test_a_blocked_host_is_refused_in_any_spelling_including_after_a_redirect(settings, rest_api):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1", "localhost"]
    target = f"http://localhost:{rest_api.port}/doc.md"
    outcome = fetch([target, f"{rest_api.base}/redirect?to={target}"], blocked_domains=["LOCALHOST."])
    assert all("blocked for this agent" in r for r in outcome.retries[:2])


@pytest.mark.parametrize("entry,stored", [("Exämple.COM.", "xn--exmple-cua.com"), ("docs.Python.org", "docs.python.org"),
                                          ("ｅxample.com", "example.com")])
def test_domain_entries_are_stored_in_the_spelling_dns_would_be_asked_for(entry, stored):
    assert WebFetchConfig(allowed_domains=[entry]).allowed_domains == [stored]


@pytest.mark.parametrize("entry", ["*.example.com", "https://example.com", "example.com/docs", "example.com:443", ""])
def test_entries_that_could_never_match_are_refused(entry):
    with pytest.raises(ValidationError):
        WebFetchConfig(blocked_domains=[entry])


def test_an_empty_allow_list_is_refused_and_an_empty_block_list_reads_as_unset():
    with pytest.raises(ValidationError, match="empty allow-list"):
        WebFetchConfig(allowed_domains=[])
    assert WebFetchConfig(blocked_domains=[]).blocked_domains is None


@pytest.mark.parametrize("method", ["native", "auto"])
def test_approval_with_a_provider_executed_fetch_is_refused_and_not_assembled(method):
    binding = CapabilityBinding(id="web_fetch", config={"method": method}, approval="required")
    config = WebFetchConfig(method=method)
    assert binding_problems(binding, config)
    from agents.runner.assembly import AssemblyError
    from tests.capabilities.helpers import deps

    with pytest.raises(AssemblyError, match="web_fetch"):
        registry.build_for_run(spec(binding.model_dump()), deps())
    assert binding_problems(CapabilityBinding(id="web_fetch", config={"method": "local"}, approval="required"),
                            WebFetchConfig()) == []


def test_auto_is_native_where_the_model_has_it_and_local_elsewhere(rest_api):
    from pydantic_ai.profiles import ModelProfile

    the_spec = spec({"id": "web_fetch", "config": {"method": "auto"}})
    native = run_sync(the_spec, [], org_id=ORG)
    assert native.script.offered == []
    assert [t.kind for t in native.script.requests[0].model_request_parameters.native_tools] == ["web_fetch"]
    local = run_sync(the_spec, [("web_fetch", {"url": f"{rest_api.base}/doc.md"})], org_id=ORG,
                     profile=ModelProfile(supported_native_tools=frozenset()))
    assert local.script.offered == ["web_fetch"]
    assert local.returns[0]["content"] == "# Title\n\nSome *markdown*."
