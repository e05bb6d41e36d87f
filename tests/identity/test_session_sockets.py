"""A session that stops stops its open sockets too: the member's web chat (the Builder's test chat is the same
socket) closes at once with the spec's 4003 when they sign out, are signed out by an owner or by "sign out the
others", are deactivated by SCIM, suspended or removed — and only the sockets concerned: another session of the
same person, the same session acting in another organization, and other people's sockets stay open.

Through the full ASGI app (config.asgi) and the real channel layer (Redis), with sessions made by signing in."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as dj_settings
from django.test import Client
from django.utils import timezone

from agenticos.models import Membership
from agenticos.session_sockets import CLOSE_SIGNED_OUT, concerns, session_tag
from config.asgi import application
from identity import provisioning
from identity.models import VerifiedDomain
from tests import factories
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "pw-correct-horse-9"
TIMEOUT = 10
QUIET = 0.3  # how long "nothing else came" is listened for


@sync_to_async
def signed_in(user) -> Client:
    client = Client()
    assert client.post("/login/", {"username": user.email, "password": PASSWORD, "next": ""}).status_code == 302
    return client


@sync_to_async
def post(client: Client, path: str, data: dict | None = None, **extra) -> int:
    return client.post(path, data or {}, **extra).status_code


async def chat_socket(client: Client) -> WebsocketCommunicator:
    cookie = f"{dj_settings.SESSION_COOKIE_NAME}={client.cookies[dj_settings.SESSION_COOKIE_NAME].value}"
    socket = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"cookie", cookie.encode())])
    connected, _ = await socket.connect(timeout=TIMEOUT)
    assert connected
    return socket


async def closed_with(socket: WebsocketCommunicator) -> int:
    """The close code the server sent (the first output must be the close)."""
    output = await socket.receive_output(timeout=TIMEOUT)
    assert output["type"] == "websocket.close", output
    return output["code"]


async def still_open(socket: WebsocketCommunicator) -> bool:
    """Nothing came, and the socket still answers a frame (an unknown type is answered, not closed)."""
    if not await socket.receive_nothing(timeout=QUIET):
        return False
    await socket.send_to(text_data=json.dumps({"type": "ping?"}))
    answer = json.loads(await socket.receive_from(timeout=TIMEOUT))
    return answer["type"] == "error" and answer["data"]["code"] == "bad_frame"


async def test_an_owner_signing_a_member_out_closes_their_open_chat_at_once(org, owner, member, outsider):
    laptop, phone, boss, theirs = (await signed_in(member), await signed_in(member), await signed_in(owner),
                                   await signed_in(outsider))
    sockets = [await chat_socket(c) for c in (laptop, phone, boss, theirs)]
    membership = await Membership.objects.aget(organization=org, user=member)

    assert await post(boss, f"/settings/members/{membership.pk}/sign-out") == 302

    assert await closed_with(sockets[0]) == CLOSE_SIGNED_OUT
    assert await closed_with(sockets[1]) == CLOSE_SIGNED_OUT
    assert await still_open(sockets[2]) and await still_open(sockets[3])
    for socket in sockets:
        await socket.disconnect()


async def test_only_the_sockets_acting_in_the_closing_organization_close(org, owner, outsider_org):
    """One session, two sockets: one acting in each organization. The owner of the first signs the member out
    there; the socket acting in the other organization (which this owner does not govern) stays."""
    member = await sync_to_async(factories.member)(org, "member")
    await Membership.objects.acreate(organization=outsider_org, user=member, role="member")
    laptop, boss = await signed_in(member), await signed_in(owner)
    await post(laptop, "/organizations/switch/", {"organization": str(org.pk)})
    here = await chat_socket(laptop)
    await post(laptop, "/organizations/switch/", {"organization": str(outsider_org.pk)})
    there = await chat_socket(laptop)
    membership = await Membership.objects.aget(organization=org, user=member)

    assert await post(boss, f"/settings/members/{membership.pk}/sign-out") == 302

    assert await closed_with(here) == CLOSE_SIGNED_OUT
    assert await still_open(there)
    await here.disconnect()
    await there.disconnect()


async def test_signing_out_closes_that_sessions_sockets_and_no_other(org, member):
    laptop, phone = await signed_in(member), await signed_in(member)
    on_laptop, on_phone = await chat_socket(laptop), await chat_socket(phone)

    assert await post(laptop, "/logout/") == 302

    assert await closed_with(on_laptop) == CLOSE_SIGNED_OUT
    assert await still_open(on_phone)
    await on_laptop.disconnect()
    await on_phone.disconnect()


async def test_signing_the_others_out_keeps_this_sessions_socket(org, member):
    laptop, phone, tablet = await signed_in(member), await signed_in(member), await signed_in(member)
    on_laptop, on_phone, on_tablet = [await chat_socket(c) for c in (laptop, phone, tablet)]

    assert await post(laptop, "/settings/sessions/sign-out") == 302

    assert await closed_with(on_phone) == CLOSE_SIGNED_OUT
    assert await closed_with(on_tablet) == CLOSE_SIGNED_OUT
    assert await still_open(on_laptop)
    for socket in (on_laptop, on_phone, on_tablet):
        await socket.disconnect()


@pytest.mark.parametrize("action", ["suspend", "remove"])
async def test_suspending_or_removing_a_member_closes_their_sockets_in_that_organization(org, owner, outsider_org,
                                                                                       action):
    member = await sync_to_async(factories.member)(org, "member")
    await Membership.objects.acreate(organization=outsider_org, user=member, role="member")
    colleague = await sync_to_async(factories.member)(org, "member")
    laptop, boss, other = await signed_in(member), await signed_in(owner), await signed_in(colleague)
    await post(laptop, "/organizations/switch/", {"organization": str(org.pk)})
    here = await chat_socket(laptop)
    await post(laptop, "/organizations/switch/", {"organization": str(outsider_org.pk)})
    there, colleagues = await chat_socket(laptop), await chat_socket(other)
    membership = await Membership.objects.aget(organization=org, user=member)

    assert await post(boss, f"/settings/members/{membership.pk}", {"action": action}) == 302

    assert await closed_with(here) == CLOSE_SIGNED_OUT
    assert await still_open(there) and await still_open(colleagues)
    for socket in (here, there, colleagues):
        await socket.disconnect()


async def test_scim_deactivation_closes_the_members_sockets_at_once(owner):
    acme = await sync_to_async(factories.organization)(name="Acme")
    boss = await sync_to_async(factories.member)(acme, "owner", email="boss@acme.com")
    ada = await sync_to_async(factories.member)(acme, "member", email="ada@acme.com")
    await VerifiedDomain.objects.acreate(organization=acme, domain="acme.com", token="t", verified_at=timezone.now())
    _, token = await sync_to_async(provisioning.create_token)(actor=owner_actor(acme, boss), name="Entra")
    laptop, owners = await signed_in(ada), await signed_in(boss)
    socket, owners_socket = await chat_socket(laptop), await chat_socket(owners)
    membership = await Membership.objects.aget(organization=acme, user=ada)

    answer = await sync_to_async(Client().patch)(
        f"/scim/v2/Users/{membership.pk}", data=json.dumps({
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "Replace", "path": "active", "value": "False"}]}),
        content_type="application/scim+json", HTTP_AUTHORIZATION=f"Bearer {token}")

    assert answer.status_code == 200
    assert await closed_with(socket) == CLOSE_SIGNED_OUT
    assert await still_open(owners_socket)
    await socket.disconnect()
    await owners_socket.disconnect()


async def test_a_refused_ending_closes_nothing(org, owner, member, viewer):
    """A viewer cannot sign a member out: the member's socket stays open (the refusal sent nothing)."""
    laptop, weaker = await signed_in(member), await signed_in(viewer)
    socket = await chat_socket(laptop)
    membership = await Membership.objects.aget(organization=org, user=member)

    assert await post(weaker, f"/settings/members/{membership.pk}/sign-out") == 403

    assert await still_open(socket)
    await socket.disconnect()


def test_the_event_names_sessions_by_digest_and_matches_organization_and_session():
    key = "k" * 32
    assert session_tag(key) != key and key not in session_tag(key)
    event = {"organization": "o1", "sessions": [session_tag(key)]}
    assert concerns(event, organization_id="o1", session_key=key)
    assert not concerns(event, organization_id="o2", session_key=key)
    assert not concerns(event, organization_id="o1", session_key="other")
    assert concerns({"organization": None, "sessions": None}, organization_id="o9", session_key=None)


async def test_the_live_browse_view_closes_with_its_session_too(org, owner):
    """The live view of a browse (capabilities.browser) is a session socket like the chat: signing out closes it."""
    from tests.runner.conftest import publish
    from tests.runner.test_execute import start

    def a_run():
        agent, version = publish(org, owner)
        return start(org, owner, agent, version, prompt="browse")

    run = await sync_to_async(a_run)()
    laptop = await signed_in(owner)
    cookie = f"{dj_settings.SESSION_COOKIE_NAME}={laptop.cookies[dj_settings.SESSION_COOKIE_NAME].value}"
    view = WebsocketCommunicator(application, f"/ws/browse/{run.pk}/call_1/", headers=[(b"cookie", cookie.encode())])
    connected, _ = await view.connect(timeout=TIMEOUT)
    assert connected
    hello = json.loads(await view.receive_from(timeout=TIMEOUT))
    assert hello["type"] == "hello"

    assert await post(laptop, "/logout/") == 302

    assert await closed_with(view) == CLOSE_SIGNED_OUT
    await view.disconnect()
