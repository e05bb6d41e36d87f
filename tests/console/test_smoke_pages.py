import pytest

pytestmark = pytest.mark.django_db


def test_the_chat_page_renders_for_a_member(client_as, org, member, agent):
    response = client_as(member, org).get("/chat/")
    assert response.status_code == 200
    assert b"chat-state" in response.content
