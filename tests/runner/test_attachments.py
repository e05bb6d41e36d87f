"""Attached files reach the model: a document as its text (a PDF page by page), an image as an image; a file
that cannot be read is named with the reason; the transcript keeps what the person wrote."""

from __future__ import annotations

import json

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from pydantic_ai import BinaryContent
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from agents.models import Message
from tests.knowledge.files import pdf
from tests.runner.conftest import publish
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def recording_model(seen: list) -> FunctionModel:
    def respond(messages, info):
        seen.append(messages)
        return ModelResponse(parts=[TextPart("Read it.")])

    async def stream(messages, info):
        seen.append(messages)
        yield "Read it."

    return FunctionModel(respond, stream_function=stream, model_name="scripted")


def stored(name: str, mime: str, data: bytes) -> dict:
    path = default_storage.save(f"test-attachments/{name}", ContentFile(data))
    return {"file_id": name, "name": name, "mime": mime, "size": len(data), "path": path}


def prompt_content(seen: list) -> list:
    first_request = next(m for m in seen[0] if isinstance(m, ModelRequest))
    part = next(p for p in first_request.parts if isinstance(p, UserPromptPart))
    return [part.content] if isinstance(part.content, str) else list(part.content)


@pytest.fixture
def agent(org, owner):
    return publish(org, owner)


def test_a_pdf_an_image_and_a_text_file_reach_the_model_and_the_transcript_keeps_the_question(
        org, owner, agent, scripted_model):
    seen: list = []
    scripted_model(recording_model(seen))
    files = [
        stored("report.pdf", "application/pdf", pdf(["Revenue grew 12 percent.", "Costs fell in March."])),
        stored("photo.png", "image/png", PNG),
        stored("notes.md", "text/markdown", b"# Notes\nShip on Friday."),
    ]
    run = start(org, owner, *agent, prompt="What do these say?", attachments=files)

    run_now(run)

    content = prompt_content(seen)
    assert content[0] == "What do these say?"
    text = "\n".join(c for c in content if isinstance(c, str))
    assert "[Attached file: report.pdf (application/pdf," in text
    assert "[page 1]\nRevenue grew 12 percent." in text and "[page 2]\nCosts fell in March." in text
    assert "Ship on Friday." in text
    images = [c for c in content if isinstance(c, BinaryContent)]
    assert len(images) == 1 and images[0].media_type == "image/png" and images[0].data == PNG
    user_message = Message.objects.get(run=run, role="user")
    assert user_message.content == "What do these say?"
    assert [a["name"] for a in user_message.attachments] == ["report.pdf", "photo.png", "notes.md"]
    assert "Revenue grew" not in json.dumps(list(Message.objects.values("content", "parts")))


def test_a_missing_file_an_unreadable_pdf_and_an_oversized_image_are_named_not_dropped(
        org, owner, agent, scripted_model, settings):
    settings.ATTACHMENT_INLINE_IMAGE_MAX_MB = 1
    seen: list = []
    scripted_model(recording_model(seen))
    missing = stored("gone.txt", "text/plain", b"hello")
    default_storage.delete(missing["path"])
    files = [
        missing,
        stored("broken.pdf", "application/pdf", b"%PDF-1.4 this is not really a pdf"),
        stored("huge.png", "image/png", PNG + b"\x00" * (1024 * 1024)),
    ]
    run = start(org, owner, *agent, prompt="Look", attachments=files)

    run_now(run)

    content = prompt_content(seen)
    assert not any(isinstance(c, BinaryContent) for c in content)
    text = "\n".join(content)
    assert "gone.txt" in text and "could not be read back from storage" in text
    assert "broken.pdf" in text and "Its content could not be read:" in text
    assert "huge.png" in text and "larger than 1 MB" in text
    run.refresh_from_db()
    assert run.status == "completed"


def test_a_long_document_is_cut_with_a_note_saying_how_much_is_missing(org, owner, agent, scripted_model, settings):
    settings.ATTACHMENT_MAX_CHARS = 1000
    seen: list = []
    scripted_model(recording_model(seen))
    run = start(org, owner, *agent, prompt="Summarise", attachments=[stored("long.txt", "text/plain", b"x" * 5000)])

    run_now(run)

    text = "\n".join(c for c in prompt_content(seen) if isinstance(c, str))
    assert "x" * 1000 in text and "x" * 1001 not in text
    assert "4000 more characters not shown" in text


def test_a_turn_without_files_sends_the_prompt_as_plain_text(org, owner, agent, scripted_model):
    seen: list = []
    scripted_model(recording_model(seen))
    run_now(start(org, owner, *agent, prompt="Just a question"))
    assert prompt_content(seen) == ["Just a question"]
