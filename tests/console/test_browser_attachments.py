"""Files in web chat, in Debian's chromium against daphne + a real Celery worker, at 1440 and 390 px: the attach
button, a drop on the composer and a paste put files in the composer as chips (name, size, remove); a file the
server refuses by its bytes stays on its chip with the reason and is removed by touch; the message goes with the
others, the model (scripted, through the real runner) receives the image as an image and the document as its text;
the person's message shows its files live and again when the conversation is reopened. Nothing overflows a phone's
width, and the only console error is the refused upload's own 415."""

from __future__ import annotations

import pytest
from pydantic_ai import BinaryContent
from pydantic_ai.messages import UserPromptPart
from pydantic_ai.models.function import FunctionModel

from agents.models import Message
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import TIMEOUT, sign_in, wait_idle
from tests.console.test_browser_chat_actions import member
from tests.console.test_browser_turn_renderer import console_errors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))


async def describe_what_arrived(messages, info):
    """Answers with what the model was given: the images (as images) and whether the document's text was in it."""
    prompts = [p for p in getattr(messages[-1], "parts", []) if isinstance(p, UserPromptPart)]
    content = prompts[-1].content if prompts else ""
    items = content if isinstance(content, list) else [content]
    images = [item.media_type for item in items if isinstance(item, BinaryContent)]
    text = " ".join(item for item in items if isinstance(item, str))
    yield f"Images seen: {len(images)} ({', '.join(images)}). Order 1234 read: {'order 1234' in text}."


# Files handed to the chat the way a browser does: a paste on the text, a drop on the conversation.
PASTE_JS = """([name, body]) => {
  const data = new DataTransfer();
  data.items.add(new File([body], name, {type: 'text/plain'}));
  document.querySelector('[data-composer-text]').dispatchEvent(
    new ClipboardEvent('paste', {clipboardData: data, bubbles: true, cancelable: true}));
}"""
DROP_JS = """([name, bytes]) => {
  const data = new DataTransfer();
  data.items.add(new File([new Uint8Array(bytes)], name, {type: 'image/png'}));
  const target = document.querySelector('[data-transcript]');  // anywhere on the conversation, not only the composer
  target.dispatchEvent(new DragEvent('dragover', {dataTransfer: data, bubbles: true, cancelable: true}));
  const dropped = target.dispatchEvent(new DragEvent('drop', {dataTransfer: data, bubbles: true, cancelable: true}));
  return dropped;  // false: the page took the drop (the browser does not open the file instead)
}"""
CHIPS_JS = """(selector) => Array.from(document.querySelectorAll(selector + ' .file-chip')).map(c => [
  c.dataset.fileChip, c.querySelector('.file-chip-name').textContent, c.querySelector('.file-chip-size').textContent])"""
OVERFLOW_JS = """(width) => Array.from(document.querySelectorAll('body *'))
  .filter(e => e.getBoundingClientRect().right > width + 1 && !e.closest('.sidenav'))
  .slice(0, 5).map(e => e.tagName + '.' + e.className)"""


def wait_ready(page, count):
    page.wait_for_function(f"() => document.querySelectorAll('[data-composer-files] .file-chip').length === {count} && "
                           "!document.querySelector('[data-composer-files] [data-file-chip=uploading]')")


@pytest.mark.parametrize("width", [1440, 390])
def test_files_attached_by_button_drop_and_paste_reach_the_model_and_stay_on_the_message(
        live_server_url, browser, scripted_model, width):
    scripted_model(FunctionModel(stream_function=describe_what_arrived, model_name="scripted"))
    org = factories.organization(name="Acme")
    person = member(org, "attacher@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Reader")
    context = browser.new_context(viewport={"width": width, "height": 900}, has_touch=width < 500)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = console_errors(page)
    sign_in(page, live_server_url, "attacher@example.com", then=f"/chat/?agent={agent.pk}")

    # The attach button opens the file picker; a file whose bytes are not an accepted type is refused on its chip.
    attach = page.get_by_role("button", name="Attach files")
    box = attach.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= width and box["height"] >= 44
    with page.expect_file_chooser() as chooser:
        attach.click()
    chooser.value.set_files([{"name": "screen.png", "mimeType": "image/png", "buffer": PNG},
                             {"name": "evil.png", "mimeType": "image/png", "buffer": b"<html><script>x</script>"}])
    wait_ready(page, 2)
    assert page.evaluate(CHIPS_JS, "[data-composer-files]") == [
        ["ready", "screen.png", "208 B"], ["failed", "evil.png", "24 B"]]
    refusal = page.locator("[data-composer-files] [data-file-error]").text_content()
    assert refusal.startswith("Not attached: This kind of file is not accepted")

    # Dropped and pasted files join them; the refused one is removed (a tap at a phone's width).
    assert page.evaluate(DROP_JS, ["photo.png", list(PNG)]) is False
    page.evaluate(PASTE_JS, ["notes.txt", "order 1234, blue, size M"])
    wait_ready(page, 4)
    remove = page.get_by_role("button", name="Remove evil.png")
    if width < 500:
        remove.tap()
    else:
        remove.click()
    wait_ready(page, 3)
    assert [c[1] for c in page.evaluate(CHIPS_JS, "[data-composer-files]")] == ["screen.png", "photo.png", "notes.txt"]
    assert page.evaluate(OVERFLOW_JS, width) == []
    page.screenshot(path=str(ARTIFACTS / f"chat-attachments-composer-{width}.png"), full_page=True)

    # Sent: the chips move onto the person's message; the model was given both images and the document's text.
    page.get_by_label("Message").fill("What are these?")
    page.get_by_role("button", name="Send").click()
    wait_idle(page, 1)
    assert page.locator("[data-composer-files]").is_hidden()
    live = page.evaluate(CHIPS_JS, ".turn-user [data-message-files]")
    assert live == [["ready", "screen.png", "208 B"], ["ready", "photo.png", "208 B"], ["ready", "notes.txt", "24 B"]]
    answer = page.locator(".turn-assistant .answer").text_content().strip()
    assert answer == "Images seen: 2 (image/png, image/png). Order 1234 read: True."
    message = Message.objects.get(conversation__owner=person, role="user")
    assert [a["name"] for a in message.attachments] == ["screen.png", "photo.png", "notes.txt"]
    assert page.evaluate(OVERFLOW_JS, width) == []

    # Reopened, the message shows its files again, and the message actions are still there.
    page.reload()
    page.wait_for_selector(".turn-user [data-message-files]")
    assert page.evaluate(CHIPS_JS, ".turn-user [data-message-files]") == live
    assert page.locator(".turn-user .bubble").text_content() == "What are these?"
    assert page.locator(".turn-user [data-action=copy]").is_visible()
    assert page.evaluate(OVERFLOW_JS, width) == []
    page.screenshot(path=str(ARTIFACTS / f"chat-attachments-reopened-{width}.png"), full_page=True)
    assert [e for e in errors if "status of 415" not in e] == []
    assert len(errors) == 1  # the refused upload, and nothing else
    context.close()


def test_a_message_of_only_files_says_what_arrived(live_server_url, browser, scripted_model):
    scripted_model(FunctionModel(stream_function=describe_what_arrived, model_name="scripted"))
    org = factories.organization(name="Acme")
    member(org, "quiet@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Reader")
    page = browser.new_page(viewport={"width": 390, "height": 800})
    page.set_default_timeout(TIMEOUT)
    errors = console_errors(page)
    sign_in(page, live_server_url, "quiet@example.com", then=f"/chat/?agent={agent.pk}")
    page.locator("[data-attach-input]").set_input_files(
        [{"name": "receipt.png", "mimeType": "image/png", "buffer": PNG}])
    wait_ready(page, 1)
    page.get_by_role("button", name="Send").click()  # no words: the chips alone are a message
    wait_idle(page, 1)
    assert page.locator(".turn-assistant .answer").text_content().strip() == "Images seen: 1 (image/png). Order 1234 read: False."
    page.reload()
    page.wait_for_selector(".turn-user [data-message-files]")
    assert page.locator(".turn-user .bubble").text_content() == "Attached image: receipt.png"
    assert errors == []
    page.close()
