"""SSRF: metadata always refused, private refused unless listed, redirects re-checked, the DNS answer pinned."""

from __future__ import annotations

import asyncio

import pytest

from agenticos import netguard


def fetch(url: str, **kw):
    return asyncio.run(netguard.safe_request("GET", url, **kw))


def test_the_cloud_metadata_address_is_refused_even_when_the_operator_lists_it(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["169.254.169.254", "169.254.0.0/16"]
    with pytest.raises(netguard.AddressRefused, match="cloud metadata"):
        fetch("http://169.254.169.254/latest/meta-data/")


def test_a_metadata_address_in_ipv6_clothing_is_refused(settings):
    with pytest.raises(netguard.AddressRefused, match="cloud metadata"):
        fetch("http://[::ffff:169.254.169.254]/")


def test_loopback_is_refused_unless_the_operator_lists_the_host(settings, rest_api):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    with pytest.raises(netguard.AddressRefused, match="TOOL_ALLOWED_PRIVATE_HOSTS"):
        fetch(f"{rest_api.base}/echo")
    assert rest_api.requests == []
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    assert fetch(f"{rest_api.base}/echo").status == 200


def test_private_ranges_are_refused_by_default(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    for url in ("http://10.1.2.3/", "http://192.168.0.1/", "http://[::1]/", "http://0.0.0.0/", "http://100.100.100.200/"):
        with pytest.raises(netguard.AddressRefused):
            fetch(url)


def test_a_redirect_to_a_private_address_is_refused_at_the_hop(settings, rest_api):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    with pytest.raises(netguard.AddressRefused):
        fetch(f"{rest_api.base}/redirect?to=http://10.0.0.7/admin")
    with pytest.raises(netguard.AddressRefused, match="cloud metadata"):
        fetch(f"{rest_api.base}/redirect?to=http://169.254.169.254/latest/")


def test_a_redirect_that_leaves_the_origin_drops_the_credentials(settings, rest_api):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1", "localhost"]
    target = f"http://localhost:{rest_api.port}/echo"
    result = fetch(f"{rest_api.base}/redirect?to={target}", headers={"Authorization": "Bearer sekrit-0000"})
    assert result.status == 200
    first, second = rest_api.requests
    assert first.headers.get("Authorization") == "Bearer sekrit-0000"
    assert "Authorization" not in second.headers


def test_a_dns_answer_that_changes_between_check_and_connect_is_never_used(settings, rest_api, monkeypatch):
    """The name resolves to an allowed address when checked; any later lookup would answer the metadata
    address. The request still lands on the checked address, because it connects to the pinned IP."""
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["api.internal.test"]
    answers = [["127.0.0.1"]]
    lookups = []

    async def rebinding_dns(hostname: str) -> list[str]:
        lookups.append(hostname)
        return answers.pop(0) if answers else ["169.254.169.254"]

    monkeypatch.setattr(netguard, "resolve", rebinding_dns)
    result = fetch(f"http://api.internal.test:{rest_api.port}/echo")
    assert result.status == 200
    assert lookups == ["api.internal.test"]
    assert rest_api.requests[0].headers["Host"] == f"api.internal.test:{rest_api.port}"


def test_a_name_that_resolves_to_metadata_is_refused(settings, monkeypatch):
    async def dns(hostname: str) -> list[str]:
        return ["93.184.216.34", "169.254.169.254"]

    monkeypatch.setattr(netguard, "resolve", dns)
    with pytest.raises(netguard.AddressRefused, match="cloud metadata"):
        fetch("http://innocent.example/")


def test_a_body_past_the_cap_is_refused_while_streaming(settings, rest_api):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    with pytest.raises(netguard.TooLarge):
        fetch(f"{rest_api.base}/big?kb=50", max_bytes=10_000)


def test_an_encoding_that_cannot_be_bounded_is_refused(settings, rest_api):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    with pytest.raises(netguard.TooLarge, match="content-encoding"):
        fetch(f"{rest_api.base}/brotli")


@pytest.mark.parametrize("spelling", ["EXAMPLE.com", "example.com.", "exämple.com", "xn--exmple-cua.com",
                                      "ｅxample.com"])
def test_domain_filters_match_every_equivalent_spelling(spelling):
    blocked = ["example.com", "xn--exmple-cua.com"]
    with pytest.raises(netguard.DomainRefused):
        netguard.check_domain(spelling, None, blocked)


def test_every_pinned_client_shares_one_verifying_tls_context():
    """Building a TLS context loads the CA bundle: one per process, not one per run's model client."""
    import ssl

    from agenticos import netguard as guard

    first, second = guard.PinnedTransport(), guard.PinnedTransport(allowance=guard.MODEL_HOSTS)
    contexts = {id(t._inner._pool._ssl_context) for t in (first, second)}
    assert len(contexts) == 1
    context = guard.shared_tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
