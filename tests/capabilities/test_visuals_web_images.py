"""{{image:NAME}} from an https:// address (capabilities/visuals/web_images.py): only for an agent whose web_fetch or
browser_use would read that host, through netguard's pinned transport, against a local HTTPS image server. Every
hostile value — the metadata address, private ranges in several spellings, another scheme, credentials in the
address, a host outside allowed_domains or inside blocked_domains in another spelling, a redirect to another host,
a body that is not an image, too big or compressed, a reader that waits for approval — is a refusal the model can
read, leaves no visual, and (where the refusal comes before the connect) never reaches the server."""

from __future__ import annotations

import asyncio
import base64
import ssl
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agenticos import netguard
from agents.models import Run
from capabilities.visuals import web_images
from tests import factories
from tests.capabilities.helpers import Outcome, Script, agent_for, deps, spec
from tests.fakes.mem0_server import _self_signed

pytestmark = pytest.mark.django_db(transaction=True)
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
PAGE = '<img alt="logo" src="{{image:logo}}">'


class ImageServer:
    """HTTPS on 127.0.0.1 (certificate for localhost and 127.0.0.1), every path it was asked for recorded."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        folder = Path(tempfile.mkdtemp(prefix="visual-images-"))
        cert, key = _self_signed(folder)
        self.ca_file = str(cert)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's spelling)
                server.hits.append(self.path)
                port = self.server.server_address[1]
                routes: dict[str, tuple[int, dict[str, str], bytes]] = {
                    "/dot.png": (200, {"Content-Type": "image/png"}, PNG),
                    "/page.png": (200, {"Content-Type": "image/png"}, b"<!doctype html><script>alert(1)</script>"),
                    "/big.png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + b"0" * (2 * 1024 * 1024)),
                    "/gzip.png": (200, {"Content-Type": "image/png", "Content-Encoding": "gzip"}, b"\x1f\x8b" + PNG),
                    "/same": (302, {"Location": "/dot.png"}, b""),
                    "/elsewhere": (302, {"Location": f"https://127.0.0.1:{port}/dot.png"}, b""),
                    "/metadata": (302, {"Location": "https://169.254.169.254/latest/meta-data/"}, b""),
                    "/missing.png": (404, {}, b"no"),
                }
                status, headers, body = routes.get(self.path, (404, {}, b"no"))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    def url(self, path: str, host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def images(settings, monkeypatch) -> Iterator[ImageServer]:
    """The image server, reachable as `localhost` the way an operator lists an internal host for tools, and its
    certificate trusted by the pinned transport (the fake's CA, as MEM0_CA_BUNDLE trusts the fake mem0's)."""
    server = ImageServer()
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["localhost"]
    settings.DEFAULT_GRANTED_SCOPES = [*settings.DEFAULT_GRANTED_SCOPES, "web:fetch", "web:browse"]
    context = ssl.create_default_context(cafile=server.ca_file)
    monkeypatch.setattr(netguard, "shared_tls_context", lambda: context)
    yield server
    server.stop()


@pytest.fixture
def explainer(org, builder):
    return factories.published_agent(org, builder, name="Explainer", capabilities=[{"id": "visuals"}])


def draw_with(explainer, source: str, *readers: dict[str, Any]) -> Outcome:
    """One draw whose drawing uses one image from `source`, by an agent binding Visuals and `readers`, then a
    read_visual of it (which says whether a visual was left)."""
    run = Run.objects.create(organization=explainer.organization, agent=explainer, version=explainer.versions.first(),
                             surface="api")
    run_deps = deps(run_id=str(run.pk), organization_id=str(run.organization_id), agent_id=str(explainer.pk))
    script = Script([("draw", {"kind": "html", "title": "Logo", "content": PAGE,
                               "images": [{"name": "logo", "source": source}]}),
                     ("read_visual", {"visual_id": "call-0"})])
    result = agent_for(spec({"id": "visuals"}, *readers), run_deps, script).run_sync("go", deps=run_deps)
    return Outcome(messages=result.all_messages(), script=script, output=result.output)


WEB_FETCH = {"id": "web_fetch"}


def refused(outcome: Outcome) -> str:
    """The refusal the model read; the drawing left no visual."""
    assert outcome.retries == []
    answer, after = outcome.returns
    assert isinstance(answer, str) and answer.startswith("Refused"), answer
    assert after == "There is no visual 'call-0' in this conversation."
    return answer


def test_an_image_on_a_host_web_fetch_reads_goes_in_as_a_data_uri(images, explainer):
    outcome = draw_with(explainer, images.url("/dot.png"), WEB_FETCH)
    assert outcome.retries == []
    assert outcome.returns[0]["images"] == {"logo": "data:image/png;base64," + base64.b64encode(PNG).decode()}
    assert images.hits == ["/dot.png"]


def test_a_redirect_on_the_same_host_is_followed_and_one_to_another_host_is_not(images, explainer):
    assert draw_with(explainer, images.url("/same"), WEB_FETCH).returns[0]["images"]["logo"].startswith(
        "data:image/png;base64,")
    images.hits.clear()
    answer = refused(draw_with(explainer, images.url("/elsewhere"), WEB_FETCH))
    assert "redirected the image to another host (127.0.0.1)" in answer
    assert images.hits == ["/elsewhere"]  # the other host was never asked
    assert "redirected the image to another host (169.254.169.254)" in refused(
        draw_with(explainer, images.url("/metadata"), WEB_FETCH))


@pytest.mark.parametrize(("source", "named"), [
    ("https://169.254.169.254/latest/meta-data/", "cloud metadata address"),
    ("https://[fd00:ec2::254]/latest/meta-data/", "cloud metadata address"),
    ("https://127.0.0.1:{port}/dot.png", "private or local address"),
    ("https://2130706433:{port}/dot.png", "private or local address"),
    ("https://0x7f.1:{port}/dot.png", "private or local address"),
    ("https://[::1]:{port}/dot.png", "private or local address"),
    ("https://[::ffff:127.0.0.1]:{port}/dot.png", "private or local address"),
    ("https://10.0.0.1/dot.png", "private or local address"),
    ("http://localhost:{port}/dot.png", "only https:// addresses"),
    ("file:///etc/passwd", "only https:// addresses"),
    ("gopher://localhost:{port}/dot.png", "only https:// addresses"),
    ("https://user:secret@localhost:{port}/dot.png", "user name or password"),
])
def test_a_hostile_address_is_refused_before_anything_is_sent(images, explainer, source, named):
    answer = refused(draw_with(explainer, source.format(port=images.port), WEB_FETCH))
    assert named in answer
    assert images.hits == []


@pytest.mark.parametrize(("config", "named"), [
    ({"allowed_domains": ["images.example.com"]}, "localhost is not among the domains this agent may read"),
    ({"blocked_domains": ["LOCALHOST."]}, "localhost is blocked for this agent"),
])
def test_web_fetchs_own_domain_rules_limit_images_too(images, explainer, config, named):
    answer = refused(draw_with(explainer, images.url("/dot.png"), {"id": "web_fetch", "config": config}))
    assert "none of this agent's web readers would read localhost" in answer and named in answer
    assert images.hits == []


@pytest.mark.parametrize(("path", "named"), [
    ("/page.png", "is not a PNG, JPEG, GIF or WebP image"),
    ("/big.png", "larger than 2,097,152 bytes"),
    ("/gzip.png", "sent the image compressed"),
    ("/missing.png", "answered HTTP 404"),
])
def test_what_the_host_sends_must_be_an_image_of_at_most_2_mib(images, explainer, path, named):
    assert named in refused(draw_with(explainer, images.url(path), WEB_FETCH))


def test_without_a_web_reader_or_with_one_that_waits_for_approval_nothing_is_fetched(images, explainer):
    assert "does not read the web" in refused(draw_with(explainer, images.url("/dot.png")))
    gated = {"id": "web_fetch", "tool_approval": {"web_fetch": "required"}}
    assert "waits for a person's approval" in refused(draw_with(explainer, images.url("/dot.png"), gated))
    off = {"id": "web_fetch", "enabled": False}
    assert "does not read the web" in refused(draw_with(explainer, images.url("/dot.png"), off))
    assert images.hits == []


def test_the_browsers_allowed_domains_decide_for_an_agent_that_browses(images):
    browsing = spec({"id": "visuals"}, {"id": "browser_use", "config": {"allowed_domains": ["*.example.com"]}})
    web = web_images.readers_of(browsing)
    assert [r.capability_id for r in web.readers] == ["browser_use"]
    uri, answer = asyncio.run(web_images.load("logo", images.url("/dot.png"), web, 2 * 1024 * 1024))
    assert uri == "" and "browser_use: localhost is not in its allowed_domains" in answer
    assert images.hits == []
    listed = web_images.readers_of(spec({"id": "browser_use", "config": {"allowed_domains": ["localhost"]}}))
    uri, answer = asyncio.run(web_images.load("logo", images.url("/dot.png"), listed, 2 * 1024 * 1024))
    assert answer == "" and uri.startswith("data:image/png;base64,")
