"""The generation capabilities' catalog loader: read once, parsed by the capability, loud about a broken file."""

from __future__ import annotations

import pytest

from capabilities.image_generation import catalog as image_catalog
from capabilities.text_to_speech import catalog as speech_catalog
from capabilities.video_generation import catalog as video_catalog
from media.catalogs import ProviderCatalog


def test_a_broken_or_missing_file_names_its_path_and_kind(tmp_path):
    broken = tmp_path / "speech.json"
    broken.write_text('{"providers": [{"id": "x"}]}')
    with pytest.raises(RuntimeError, match=r"speech\.json is not a valid speech catalog"):
        ProviderCatalog(broken, speech_catalog.parse, "speech").providers()
    with pytest.raises(RuntimeError, match="is not a valid video catalog"):
        ProviderCatalog(tmp_path / "absent.json", video_catalog.parse, "video").providers()


def test_the_file_is_read_once_and_lookups_answer_from_it(tmp_path):
    reads = []

    def parse(raw):
        reads.append(raw)
        return image_catalog.parse(raw)

    shipped = ProviderCatalog(image_catalog.CATALOG_PATH, parse, "image")
    assert shipped.provider_ids() == sorted(image_catalog.providers())
    assert shipped.model("openai", "gpt-image-1").id == "gpt-image-1"
    assert shipped.model("openai", "no-such-model") is None and shipped.provider("nobody") is None
    assert "gpt-image-1" in shipped.model_ids() and len(reads) == 1
