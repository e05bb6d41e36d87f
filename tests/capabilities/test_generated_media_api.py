"""`GET /api/v1/generated/{filename}` (members of the file's organization) and the embed visitor's route
(`/api/v1/embed/{key}/generated/{filename}?media=<the socket's media token>`, or an anonymous visitor's key in
the `X-Visitor` header — never in the URL, which reaches access logs — that visitor's own conversation only): who
gets the bytes, who gets the same 404 envelope, and hostile names that must never reach storage or the database."""

from __future__ import annotations

import pytest
from django.core.files.storage import default_storage
from rest_framework.test import APIClient

from agenticos import services
from embeds import services as embed_services
from media import store
from tests import factories
from tests.api.conftest import actor_of
from tests.governance.helpers import conversation, run_in

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 32
VISITOR = "a" * 32
OTHER_VISITOR = "b" * 32


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner)


def make(chat, data: bytes = PNG, media_type: str = "image/png"):
    run = run_in(chat)
    return store.save(organization_id=chat.organization_id, run_id=run.pk, conversation_id=chat.pk, kind="image",
                      data=data, media_type=media_type, name="image-a-red-fox")


@pytest.fixture
def media(agent, owner):
    return make(conversation(agent, owner))


def url(media_or_name) -> str:
    return f"/api/v1/generated/{getattr(media_or_name, 'filename', media_or_name)}"


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def assert_refused(response, status: int = 404, code: str = "not_found") -> None:
    assert response.status_code == status, response.status_code
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == code


def assert_not_found(response) -> None:
    assert_refused(response)


# A NUL anywhere in a request is refused by agenticos.middleware before any view (PostgreSQL cannot store it).
NUL = (422, "invalid")


# ------------------------------------------------------------------ members


def test_a_member_gets_the_bytes_inline_with_a_type_that_cannot_run_script(api_as, member, org, media):
    response = api_as(member, org).get(url(media))

    assert response.status_code == 200
    assert body(response) == PNG
    assert response["Content-Type"] == "image/png"
    assert response["Content-Disposition"] == 'inline; filename="image-a-red-fox.png"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert response["Cache-Control"] == "private, max-age=300"


def test_download_answers_it_as_an_attachment(api_as, member, org, media):
    response = api_as(member, org).get(url(media), {"download": "1"})
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="image-a-red-fox.png"'


def test_the_boundary_is_the_organization_not_the_conversations_owner(api_as, viewer, org, media):
    # The catalog: wider than an uploaded file's (one person's) — a colleague opens what a teammate's agent drew.
    response = api_as(viewer, org).get(url(media))
    assert response.status_code == 200 and body(response) == PNG


def test_a_player_asking_for_audio_gets_the_file_and_a_miss_still_gets_json(api_as, member, org, agent, owner):
    clip = make(conversation(agent, owner), data=b"ID3" + b"\x00" * 16, media_type="audio/mpeg")
    client = api_as(member, org)

    response = client.get(url(clip), HTTP_ACCEPT="audio/mpeg")
    assert response.status_code == 200 and response["Content-Type"] == "audio/mpeg"
    assert clip.filename.endswith(".mp3")

    assert_not_found(client.get(url("0" * 32 + ".mp3"), HTTP_ACCEPT="audio/mpeg"))


def test_the_organizations_api_key_reads_it_and_another_organizations_key_does_not(
        org, owner, outsider_org, outsider, media):
    _, own_key = services.create_api_key(actor=actor_of(owner, org), name="reader")
    _, foreign_key = services.create_api_key(actor=actor_of(outsider, outsider_org), name="probe")
    client = APIClient()

    assert client.get(url(media), HTTP_AUTHORIZATION=f"Bearer {own_key}").status_code == 200
    assert_not_found(client.get(url(media), HTTP_AUTHORIZATION=f"Bearer {foreign_key}"))


# ------------------------------------------------------------------ everyone else


def test_a_member_of_another_organization_gets_the_same_404_as_for_a_name_that_does_not_exist(
        api_as, outsider, outsider_org, org, media):
    foreign = api_as(outsider, outsider_org).get(url(media))
    missing = api_as(outsider, outsider_org).get(url("f" * 32 + ".png"))

    assert_not_found(foreign)
    assert foreign.json() == missing.json()
    # Naming the file's organization does not help someone who is not in it.
    assert_not_found(api_as(outsider, org).get(url(media)))


def test_an_anonymous_caller_is_refused_in_the_envelope(media):
    response = APIClient().get(url(media))
    assert response.status_code == 401
    assert response.json()["error"]["code"] in ("not_authenticated", "forbidden")
    assert PNG not in response.content


def test_a_file_storage_lost_is_a_404_not_a_500(api_as, member, org, media):
    default_storage.delete(media.path)
    assert_not_found(api_as(member, org).get(url(media)))


def test_a_deleted_conversations_file_is_gone_from_the_route(api_as, owner, org, agent, monkeypatch,
                                                            django_capture_on_commit_callbacks):
    from agents.chat import delete_conversation
    from governance import retention

    monkeypatch.setattr(retention, "_kick", lambda: None)
    chat = conversation(agent, owner)
    media = make(chat)
    client = api_as(owner, org)
    assert client.get(url(media)).status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        delete_conversation(actor=actor_of(owner, org), conversation_id=chat.pk)

    assert_not_found(client.get(url(media)))


@pytest.mark.parametrize(("hostile", "refusal"), [
    ("..%2F..%2F..%2Fetc%2Fpasswd", ()),
    ("..%2Fgenerated%2Fx.png", ()),
    ("..", ()),
    ("%2e%2e", ()),
    ("0123456789ABCDEF0123456789ABCDEF.png", ()),
    ("x" * 2000, ()),
    ("%C0%AE%C0%AE%2Fpasswd", ()),
    ("%E2%80%AEgnp.exe", ()),
    ("abc%00.png", NUL),
    ("%00", NUL),
    ("0123456789abcdef0123456789abcdef.png%00", NUL),
])
def test_a_hostile_filename_is_refused_in_the_envelope_and_never_reaches_storage(
        api_as, member, org, media, hostile, refusal, monkeypatch):
    def no_storage(*args, **kwargs):
        raise AssertionError("storage was asked for a hostile name")

    monkeypatch.setattr(store.default_storage, "open", no_storage)
    assert_refused(api_as(member, org).get(f"/api/v1/generated/{hostile}"), *refusal)


def test_the_filename_of_a_stored_file_with_a_path_stays_inside_the_route(api_as, member, org, media):
    # The stored path (generated/<org>/<name>) is not a handle: only the bare filename is.
    assert_not_found(api_as(member, org).get(f"/api/v1/generated/{media.path.replace('/', '%2F')}"))


# ------------------------------------------------------------------ the embed visitor


@pytest.fixture
def widget(agent, builder):
    return factories.embed(agent, kind="widget", created_by=builder)


@pytest.fixture
def visitor_media(widget):
    return make(embed_services.create_conversation(widget, VISITOR))


def embed_url(embed, media_or_name, media_token: str | None = None) -> str:
    name = getattr(media_or_name, "filename", media_or_name)
    query = f"?media={media_token}" if media_token else ""
    return f"/api/v1/embed/{embed.public_key}/generated/{name}{query}"


def as_visitor(visitor: str | None = VISITOR) -> dict[str, str]:
    return {"HTTP_X_VISITOR": visitor} if visitor else {}


def test_the_visitor_of_the_conversation_gets_its_file_on_the_embeds_route(client, widget, visitor_media):
    response = client.get(embed_url(widget, visitor_media), **as_visitor())
    assert response.status_code == 200 and body(response) == PNG
    assert response["Content-Type"] == "image/png"
    assert response["Cross-Origin-Resource-Policy"] == "cross-origin"
    assert response["X-Content-Type-Options"] == "nosniff"
    by_token = client.get(embed_url(widget, visitor_media, embed_services.media_token(widget, VISITOR)))
    assert by_token.status_code == 200 and body(by_token) == PNG


def test_the_visitor_key_in_the_url_opens_nothing(client, widget, visitor_media):
    # A URL reaches access logs: the continuity key there is not accepted (issue 37.6).
    assert_not_found(client.get(f"/api/v1/embed/{widget.public_key}/generated/{visitor_media.filename}"
                                f"?visitor={VISITOR}"))


def test_another_visitor_a_missing_visitor_and_another_embed_get_404(client, agent, builder, widget, visitor_media):
    embed_services.create_conversation(widget, OTHER_VISITOR)
    other_widget = factories.embed(agent, kind="widget", created_by=builder)
    embed_services.create_conversation(other_widget, VISITOR)  # the same visitor key on another embed

    assert_not_found(client.get(embed_url(widget, visitor_media), **as_visitor(OTHER_VISITOR)))
    assert_not_found(client.get(embed_url(widget, visitor_media)))
    assert_not_found(client.get(embed_url(other_widget, visitor_media), **as_visitor()))
    assert_not_found(client.get(embed_url(widget, visitor_media), **as_visitor("not-hex")))
    # Another embed's token, and another thread's, open nothing here.
    assert_not_found(client.get(embed_url(widget, visitor_media, embed_services.media_token(other_widget, VISITOR))))
    assert_not_found(client.get(embed_url(widget, visitor_media, embed_services.media_token(widget, OTHER_VISITOR))))


def test_the_visitor_cannot_reach_a_members_file_of_the_same_organization(client, widget, visitor_media, media):
    assert_not_found(client.get(embed_url(widget, media), **as_visitor()))


def test_the_visitor_route_refuses_hostile_names_and_keys_in_the_envelope(client, widget, visitor_media):
    header = as_visitor()
    assert_not_found(client.get(f"/api/v1/embed/{widget.public_key}/generated/..%2F..%2Fx.png", **header))
    assert_not_found(client.get(f"/api/v1/embed/{widget.public_key}/generated/{'f' * 3000}", **header))
    assert_not_found(client.get(f"/api/v1/embed/{'k' * 500}/generated/{visitor_media.filename}", **header))
    assert_refused(client.get(f"/api/v1/embed/{widget.public_key}/generated/abc%00.png", **header), *NUL)
    assert_not_found(client.get(embed_url(widget, visitor_media, "x" * 5000)))


# ------------------------------------------------------------------ the schema


def test_the_route_is_documented_as_the_files_bytes(api_as, member, org):
    schema = api_as(member, org).get("/api/schema/?format=json")
    operation = schema.json()["paths"]["/api/v1/generated/{filename}"]["get"]
    assert set(operation["responses"]["200"]["content"]) == set(store.EXTENSIONS)
    assert set(operation["responses"]["206"]["content"]) == set(store.EXTENSIONS)
    assert "416" in operation["responses"]
    assert operation["responses"]["200"]["content"]["image/png"]["schema"] == {"type": "string",
                                                                               "format": "binary"}
    assert operation["responses"]["404"]["content"]["application/json"]


# ------------------------------------------------------------------ byte ranges (players seek)


CLIP = bytes(range(256)) * 4  # 1024 distinct-enough bytes


@pytest.fixture
def clip(agent, owner):
    return make(conversation(agent, owner), data=CLIP, media_type="audio/mpeg")


@pytest.mark.parametrize(("header", "first", "last"), [
    ("bytes=0-99", 0, 99),
    ("bytes=1000-", 1000, 1023),
    ("bytes=-24", 1000, 1023),
    ("bytes=1000-5000", 1000, 1023),
])
def test_a_range_is_answered_206_with_just_those_bytes(api_as, member, org, clip, header, first, last):
    response = api_as(member, org).get(url(clip), HTTP_RANGE=header)

    assert response.status_code == 206
    assert body(response) == CLIP[first:last + 1]
    assert response["Content-Range"] == f"bytes {first}-{last}/{len(CLIP)}"
    assert response["Content-Length"] == str(last - first + 1)
    assert response["Content-Type"] == "audio/mpeg" and response["X-Content-Type-Options"] == "nosniff"


def test_the_whole_file_says_it_takes_ranges_and_a_range_it_cannot_parse_gets_the_whole_file(
        api_as, member, org, clip):
    client = api_as(member, org)
    whole = client.get(url(clip))
    assert whole.status_code == 200 and whole["Accept-Ranges"] == "bytes"
    for ignored in ("bytes=0-1,5-9", "items=0-9", "bytes=-", "bytes=a-b"):
        response = client.get(url(clip), HTTP_RANGE=ignored)
        assert response.status_code == 200 and body(response) == CLIP, ignored


def test_a_range_past_the_end_is_416_in_the_envelope(api_as, member, org, clip):
    for header in ("bytes=1024-", "bytes=2000-3000", "bytes=50-10", "bytes=-0"):
        response = api_as(member, org).get(url(clip), HTTP_RANGE=header)
        assert_refused(response, 416, "range_not_satisfiable")
        assert response["Content-Range"] == f"bytes */{len(CLIP)}"


def test_the_visitor_route_answers_ranges_too(client, widget):
    media = make(embed_services.create_conversation(widget, VISITOR), data=CLIP, media_type="video/mp4")
    response = client.get(embed_url(widget, media), HTTP_RANGE="bytes=10-19", **as_visitor())
    assert response.status_code == 206 and body(response) == CLIP[10:20]
    assert response["Cross-Origin-Resource-Policy"] == "cross-origin"
