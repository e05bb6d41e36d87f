"""File → text, page by page where the format has pages.

Each parser returns `Section`s: text plus the 1-based page it came from (None for formats without a
page a reader could open). A file that cannot be read raises `ParseError` with a sentence a person
understands; ingestion stores it on the document as its failure reason.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

from knowledge.models import DocumentKind


class ParseError(Exception):
    """A file we cannot read. The message is shown to people as is."""


@dataclass(frozen=True)
class Section:
    text: str
    page: int | None = None


EXTENSIONS: dict[str, str] = {
    ".pdf": DocumentKind.PDF,
    ".pptx": DocumentKind.PRESENTATION,
    ".docx": DocumentKind.DOCX,
    ".md": DocumentKind.MARKDOWN,
    ".markdown": DocumentKind.MARKDOWN,
    ".html": DocumentKind.HTML,
    ".htm": DocumentKind.HTML,
    ".csv": DocumentKind.CSV,
    ".xlsx": DocumentKind.XLSX,
    ".txt": DocumentKind.TEXT,
    ".text": DocumentKind.TEXT,
}


def kind_for(filename: str) -> str | None:
    return EXTENSIONS.get(PurePath(filename).suffix.lower())


def supported_extensions() -> list[str]:
    return sorted(EXTENSIONS)


def parse(kind: str, data: bytes) -> list[Section]:
    parser = _PARSERS.get(kind)
    if parser is None:
        raise ParseError(f"Files of type {kind!r} cannot be ingested.")
    try:
        sections = parser(data)
    except ParseError:
        raise
    except Exception as exc:  # every library raises its own family; the person needs one sentence
        raise ParseError(f"This file could not be read as {DocumentKind(kind).label}: {_short(exc)}") from exc
    sections = [s for s in sections if s.text.strip()]
    if not sections:
        raise ParseError("This file has no text that can be searched (is it a scan without a text layer?).")
    return sections


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


def _decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "utf-16"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if encoding == "utf-16" and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            continue
        return text
    if b"\x00" in data[:4096]:
        raise ParseError("This file looks binary, not text.")
    return data.decode("latin-1")


def _text(data: bytes) -> list[Section]:
    return [Section(_decode(data))]


def _html(data: bytes) -> list[Section]:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(_decode(data), "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()  # their text is code, not content
    return [Section(MarkdownConverter(heading_style="ATX").convert_soup(soup).strip())]


def _csv(data: bytes) -> list[Section]:
    text = _decode(data)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel  # type: ignore[assignment]
    rows = list(csv.reader(io.StringIO(text), dialect))
    return [Section(_rows_to_text(rows))]


def _rows_to_text(rows: list[list[str]]) -> str:
    """Each row as 'header: value' pairs, so a chunk cut mid-table still says what each value is."""
    rows = [r for r in rows if any(str(c).strip() for c in r)]
    if not rows:
        return ""
    header = [str(h).strip() for h in rows[0]]
    lines = [" | ".join(header)]
    for row in rows[1:]:
        pairs = [f"{header[i] if i < len(header) and header[i] else f'column {i + 1}'}: {str(v).strip()}"
                 for i, v in enumerate(row) if str(v).strip()]
        lines.append("; ".join(pairs))
    return "\n".join(lines)


def _xlsx(data: bytes) -> list[Section]:
    from openpyxl import load_workbook

    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    out = []
    for sheet in workbook.worksheets:
        rows = [["" if v is None else str(v) for v in row] for row in sheet.iter_rows(values_only=True)]
        body = _rows_to_text(rows)
        if body:
            out.append(Section(f"Sheet: {sheet.title}\n{body}"))
    workbook.close()
    return out


def _docx(data: bytes) -> list[Section]:
    import docx

    document = docx.Document(io.BytesIO(data))
    parts = [p.text for p in document.paragraphs]
    for table in document.tables:
        parts.append(_rows_to_text([[cell.text for cell in row.cells] for row in table.rows]))
    return [Section("\n\n".join(p for p in parts if p.strip()))]


def _pdf(data: bytes) -> list[Section]:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ParseError("This PDF is password-protected; upload an unlocked copy.")
        return [Section(page.extract_text() or "", page=i) for i, page in enumerate(reader.pages, start=1)]
    except FileNotDecryptedError as exc:
        raise ParseError("This PDF is password-protected; upload an unlocked copy.") from exc
    except PdfReadError as exc:
        raise ParseError(f"This file is not a readable PDF: {_short(exc)}") from exc


def _pptx(data: bytes) -> list[Section]:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    out = []
    for number, slide in enumerate(deck.slides, start=1):
        texts = [shape.text_frame.text for shape in slide.shapes if getattr(shape, "has_text_frame", False)]
        out.append(Section("\n".join(t for t in texts if t.strip()), page=number))
    return out


_PARSERS: dict[str, Callable[[bytes], list[Section]]] = {
    DocumentKind.TEXT: _text,
    DocumentKind.MARKDOWN: _text,
    DocumentKind.HTML: _html,
    DocumentKind.CSV: _csv,
    DocumentKind.XLSX: _xlsx,
    DocumentKind.DOCX: _docx,
    DocumentKind.PDF: _pdf,
    DocumentKind.PRESENTATION: _pptx,
}


# ------------------------------------------------------------------ chunking

CHUNK_CHARS = 1000


@dataclass(frozen=True)
class Piece:
    text: str
    page: int | None


def chunk(sections: list[Section], size: int = CHUNK_CHARS) -> list[Piece]:
    """Split into pieces of at most ~`size` characters, never across pages, preferring paragraph and then
    line and sentence boundaries. No overlap: neighbours are contiguous, so parent context can grow a
    passage outward without repeating text."""
    pieces: list[Piece] = []
    for section in sections:
        for text in _split(section.text.strip(), size):
            if text.strip():
                pieces.append(Piece(text.strip(), section.page))
    return pieces


def _split(text: str, size: int) -> list[str]:
    if len(text) <= size:
        return [text]
    out: list[str] = []
    current = ""
    for block in _blocks(text, size):
        if current and len(current) + len(block) > size:
            out.append(current)
            current = ""
        current += block
    if current:
        out.append(current)
    return out


def _blocks(text: str, size: int) -> list[str]:
    """Units no longer than `size`, each keeping its trailing separator."""
    for separator in ("\n\n", "\n", ". ", " "):
        parts = text.split(separator)
        units = [p + separator for p in parts[:-1]] + [parts[-1]]
        if all(len(u) <= size for u in units):
            return units
    return [text[i:i + size] for i in range(0, len(text), size)]
