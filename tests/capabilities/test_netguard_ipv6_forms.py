"""The outbound guard judges every IPv6 form that carries an IPv4 address by that IPv4 address: a loopback,
private or metadata IPv4 inside is refused, in a literal URL and in a DNS answer, and is refused where a URL is
saved (a model profile's base URL, a bot's server). A public IPv4 inside the forms a network really uses to reach
public servers (mapped, translated, compatible, 6to4, NAT64 64:ff9b::/96) stays reachable; the local-use NAT64
prefix and Teredo are refused whatever they carry (decided in agenticos/netguard.py)."""

from __future__ import annotations

import asyncio
import ipaddress

import pytest

from agenticos import netguard


def _v4(value: str) -> bytes:
    return ipaddress.IPv4Address(value).packed


def _v6(packed: bytes) -> str:
    return str(ipaddress.IPv6Address(packed))


FORMS = {
    "mapped": lambda v4: f"::ffff:{v4}",
    "translated": lambda v4: f"::ffff:0:{v4}",
    "compatible": lambda v4: f"::{v4}",
    "nat64": lambda v4: f"64:ff9b::{v4}",
    # RFC 6052 /48 layout: the IPv4 in bytes 6-7 and 9-10, byte 8 the reserved "u" octet.
    "nat64_local_use": lambda v4: _v6(bytes.fromhex("0064ff9b0001") + _v4(v4)[:2] + b"\0" + _v4(v4)[2:]
                                      + bytes(5)),
    "6to4": lambda v4: _v6(bytes.fromhex("2002") + _v4(v4) + bytes(9) + b"\1"),
    # Teredo: server 65.54.227.120, flags 0x8000, port obfuscated, then the client IPv4 with every bit inverted.
    "teredo": lambda v4: _v6(bytes.fromhex("200100004136e378800063bf")
                             + bytes(b ^ 0xFF for b in _v4(v4))),
}
INTERNAL = ("127.0.0.1", "10.0.0.1", "169.254.169.254")
PUBLIC = "93.184.215.14"
PUBLIC_ALLOWED = ("mapped", "translated", "compatible", "nat64", "6to4")


def check(url: str, allowance: str = netguard.TOOL_HOSTS) -> netguard.Pinned:
    return asyncio.run(netguard.check_url(url, allowance=allowance))


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_decodes_to_the_ipv4_it_carries(form):
    if form == "nat64_local_use":
        assert netguard.embedded_ipv4(FORMS[form]("10.0.0.1")) is None  # its layout is the operator's choice
        return
    for v4 in (*INTERNAL, PUBLIC):
        assert netguard.embedded_ipv4(FORMS[form](v4)) == ipaddress.IPv4Address(v4)


@pytest.mark.parametrize("v4", INTERNAL)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_internal_ipv4_in_ipv6_clothing_is_refused_as_a_literal(settings, form, v4):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    address = FORMS[form](v4)
    expected = "cloud metadata" if v4 == "169.254.169.254" else "private or local"
    with pytest.raises(netguard.AddressRefused, match=expected):
        check(f"http://[{address}]/v1")
    assert netguard.is_private(address)


@pytest.mark.parametrize("v4", INTERNAL)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_internal_ipv4_in_ipv6_clothing_is_refused_in_a_dns_answer(settings, dns, form, v4):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    dns["api.example.test"] = ["2606:4700::1111", FORMS[form](v4)]  # one bad answer refuses the name
    with pytest.raises(netguard.AddressRefused):
        check("https://api.example.test/v1", allowance=netguard.MODEL_HOSTS)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_public_ipv4_inside_is_reachable_only_in_the_forms_that_reach_public_servers(settings, dns, form):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    address = FORMS[form](PUBLIC)
    dns["public.example.test"] = [address]
    if form in PUBLIC_ALLOWED:
        assert check(f"http://[{address}]/").ip == address
        assert check("http://public.example.test/").ip == address
    else:
        with pytest.raises(netguard.AddressRefused, match="private or local"):
            check(f"http://[{address}]/")
        with pytest.raises(netguard.AddressRefused, match="private or local"):
            check("http://public.example.test/")


def test_a_listed_ipv4_network_admits_its_addresses_in_ipv6_clothing_but_never_metadata(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["10.0.0.0/8", "169.254.0.0/16"]
    assert check("http://[::ffff:0:10.0.0.1]/").ip == "::ffff:0:10.0.0.1"
    with pytest.raises(netguard.AddressRefused, match="private or local"):
        check("http://[::ffff:0:192.168.1.1]/")
    with pytest.raises(netguard.AddressRefused, match="cloud metadata"):
        check("http://[::ffff:0:169.254.169.254]/")


def test_plain_public_ipv6_and_ipv4_addresses_are_still_reachable(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    assert check("http://[2606:4700::1111]/").ip == "2606:4700::1111"
    assert check(f"http://{PUBLIC}/").ip == PUBLIC
    assert not netguard.is_private("2606:4700::1111") and netguard.embedded_ipv4("2606:4700::1111") is None


@pytest.mark.django_db
def test_a_model_profile_base_url_in_translated_form_is_refused_and_nothing_is_saved(org, owner, settings):
    from agenticos.errors import Invalid
    from agents import services
    from agents.models import ModelProfile
    from tests.runner.conftest import actor_of

    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    with pytest.raises(Invalid) as refused:
        services.create_model_profile(actor=actor_of(owner, org), label="Internal", provider="openai_compatible",
                                      model="m", base_url="http://[::ffff:0:10.0.0.1]:8000/v1")
    assert "private or local" in str(refused.value.details)
    assert not ModelProfile.objects.filter(organization=org, label="Internal").exists()


def test_a_bot_server_in_translated_form_is_refused(settings):
    from agenticos.errors import Invalid
    from channelbots.services import check_server_url

    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = []
    with pytest.raises(Invalid, match="private or local"):
        check_server_url("https://[::ffff:0:127.0.0.1]:8065")
    with pytest.raises(Invalid, match="cloud metadata"):
        check_server_url("https://[::ffff:0:169.254.169.254]")
