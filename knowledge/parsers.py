"""File → text, page by page where the format has pages.

Each parser returns `Section`s: text plus the 1-based page it came from (None for formats without a
page a reader could open). A file that cannot be read raises `ParseError` with a sentence a person
understands; ingestion stores it on the document as its failure reason.

Word-processor files do not store their layout the way a PDF does, so their pages are the boundaries
the file itself records: `text:soft-page-break` (written by LibreOffice at every page it laid out) and
page-break styles in .odt, the page control word in .rtf, page and section breaks (0x0C) in .doc. A file recording no
boundary at all gives no page (None): calling a long document "page 1" would send a reader to the wrong
place.

Nothing a file unpacks to is trusted to be small: a 290 KB .docx once expanded to 118 MB of text. The zip
formats (.docx, .xlsx, .pptx, .odt) are refused when their members decompress to more than
KNOWLEDGE_MAX_EXPANDED_BYTES, counted on the bytes actually read out (a zip's headers can claim any size), and
every parser takes its text through a `TextBudget` of KNOWLEDGE_MAX_DOCUMENT_CHARS, so a file that repeats one
stored string (a spreadsheet's shared strings under a long header, merged table cells, a .doc piece table
pointing at the same text again and again) is refused as it grows, not after.

Images are read with OCR (the `tesseract` program, when the deployment has it); without it an image is
marked failed with a sentence saying so. Nothing is sent to a vision model at ingestion: a collection
has an embedding model, not a vision model, to price and budget such a call against.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import struct
import subprocess  # noqa: S404 - only the fixed OCR program, never a shell
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from django.conf import settings

from knowledge.models import DocumentKind

# Limits on what one file may unpack to (operators may change them in settings; read at each parse).
# KNOWLEDGE_MAX_EXPANDED_BYTES: bytes decompressed out of a zip-based file's members, all members together. Office
# XML compresses about 10:1 and a 50 MB upload is mostly pictures, which do not compress, so 200 MB leaves real
# files room while a deflate bomb (up to ~1000:1) stops at it.
DEFAULT_MAX_EXPANDED_BYTES = 200 * 1024 * 1024
# KNOWLEDGE_MAX_ARCHIVE_MEMBERS: files inside one zip (a real .xlsx/.docx holds tens to a few thousand).
DEFAULT_MAX_ARCHIVE_MEMBERS = 10_000
# KNOWLEDGE_MAX_DOCUMENT_CHARS: characters of text one file may give, about 10,000 pages of prose.
DEFAULT_MAX_DOCUMENT_CHARS = 20_000_000
_ZIP_KINDS = frozenset({DocumentKind.DOCX, DocumentKind.XLSX, DocumentKind.PRESENTATION, DocumentKind.ODT})
_READ_BLOCK = 1024 * 1024


def setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


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
    ".doc": DocumentKind.DOC,
    ".odt": DocumentKind.ODT,
    ".rtf": DocumentKind.RTF,
    ".png": DocumentKind.IMAGE,
    ".jpg": DocumentKind.IMAGE,
    ".jpeg": DocumentKind.IMAGE,
    ".gif": DocumentKind.IMAGE,
    ".bmp": DocumentKind.IMAGE,
    ".tif": DocumentKind.IMAGE,
    ".tiff": DocumentKind.IMAGE,
    ".webp": DocumentKind.IMAGE,
}


def kind_for(filename: str) -> str | None:
    return EXTENSIONS.get(PurePath(filename).suffix.lower())


def supported_extensions() -> list[str]:
    return sorted(EXTENSIONS)


class TextBudget:
    """The characters a file may still give; a parser takes each piece of text through it as it is made."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def take(self, text: str) -> str:
        self.left -= len(text)
        if self.left < 0:
            raise ParseError(f"This file holds more than {self.limit:,} characters of text, the most one document "
                             "may have; nothing was stored. Split it into smaller files.")
        return text


def check_archive(data: bytes) -> None:
    """Refuse a zip whose members decompress past the limit, counting the bytes as they come out (never the
    sizes its directory claims). The parser's library then reads the same bytes, so it reads no more."""
    limit = setting("KNOWLEDGE_MAX_EXPANDED_BYTES", DEFAULT_MAX_EXPANDED_BYTES)
    most = setting("KNOWLEDGE_MAX_ARCHIVE_MEMBERS", DEFAULT_MAX_ARCHIVE_MEMBERS)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
        if len(members) > most:
            raise ParseError(f"This file holds more than {most:,} parts inside it, the most one document may "
                             "have; nothing was stored.")
        total = 0
        for info in members:
            with archive.open(info) as member:
                while block := member.read(_READ_BLOCK):
                    total += len(block)
                    if total > limit:
                        raise ParseError(
                            f"This file unpacks to more than {limit // (1024 * 1024)} MB, the most one document "
                            "may expand to; nothing was stored. Split it into smaller files.")


def parse(kind: str, data: bytes) -> list[Section]:
    parser = _PARSERS.get(kind)
    if parser is None:
        raise ParseError(f"Files of type {kind!r} cannot be ingested.")
    budget = TextBudget(setting("KNOWLEDGE_MAX_DOCUMENT_CHARS", DEFAULT_MAX_DOCUMENT_CHARS))
    try:
        if kind in _ZIP_KINDS:
            check_archive(data)
        sections = parser(data, budget)
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


def _text(data: bytes, budget: TextBudget) -> list[Section]:
    return [Section(budget.take(_decode(data)))]


def _html(data: bytes, budget: TextBudget) -> list[Section]:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(_decode(data), "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()  # their text is code, not content
    return [Section(budget.take(MarkdownConverter(heading_style="ATX").convert_soup(soup).strip()))]


def _csv(data: bytes, budget: TextBudget) -> list[Section]:
    text = _decode(data)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel  # type: ignore[assignment]
    return [Section(_rows_to_text(csv.reader(io.StringIO(text), dialect), budget))]


def _rows_to_text(rows: Iterable[Sequence[object]], budget: TextBudget) -> str:
    """Each row as 'header: value' pairs, so a chunk cut mid-table still says what each value is.

    Rows are read one at a time and every pair is taken through the budget: the header is repeated on every
    row, so a long header over many short rows is text the file never stored."""
    header: list[str] | None = None
    lines: list[str] = []
    for row in rows:
        cells = ["" if v is None else str(v).strip() for v in row]
        if not any(cells):
            continue
        if header is None:
            header = cells
            lines.append(budget.take(" | ".join(header)))
            continue
        pairs = [budget.take(f"{header[i] if i < len(header) and header[i] else f'column {i + 1}'}: {value}")
                 for i, value in enumerate(cells) if value]
        lines.append("; ".join(pairs))
    return "\n".join(lines)


def _xlsx(data: bytes, budget: TextBudget) -> list[Section]:
    from openpyxl import load_workbook

    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    out = []
    for sheet in workbook.worksheets:
        # The stored dimension (A1:XFD1048576 costs a file nothing) would pad every row to its width.
        sheet.reset_dimensions()
        body = _rows_to_text(sheet.iter_rows(values_only=True), budget)
        if body:
            out.append(Section(f"Sheet: {sheet.title}\n{body}"))
    workbook.close()
    return out


def _docx(data: bytes, budget: TextBudget) -> list[Section]:
    import docx

    document = docx.Document(io.BytesIO(data))
    parts = [budget.take(p.text) for p in document.paragraphs]
    # A merged cell is returned once per grid column it spans: its text is counted (`seen`) as often as it is
    # read, before `_rows_to_text` counts what it writes.
    seen = TextBudget(budget.limit)
    for table in document.tables:
        rows = ([seen.take(cell.text) for cell in row.cells] for row in table.rows)
        parts.append(_rows_to_text(rows, budget))
    return [Section("\n\n".join(p for p in parts if p.strip()))]


def _pdf(data: bytes, budget: TextBudget) -> list[Section]:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ParseError("This PDF is password-protected; upload an unlocked copy.")
        return [Section(budget.take(page.extract_text() or ""), page=i)
                for i, page in enumerate(reader.pages, start=1)]
    except FileNotDecryptedError as exc:
        raise ParseError("This PDF is password-protected; upload an unlocked copy.") from exc
    except PdfReadError as exc:
        raise ParseError(f"This file is not a readable PDF: {_short(exc)}") from exc


def _pptx(data: bytes, budget: TextBudget) -> list[Section]:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    out = []
    for number, slide in enumerate(deck.slides, start=1):
        texts = [budget.take(shape.text_frame.text) for shape in slide.shapes
                 if getattr(shape, "has_text_frame", False)]
        out.append(Section("\n".join(t for t in texts if t.strip()), page=number))
    return out


def _paged(pages: list[str], recorded: bool) -> list[Section]:
    """Pages as sections when the file recorded a boundary; otherwise one section without a page."""
    if not recorded:
        return [Section("\n".join(pages))]
    return [Section(text, page=number) for number, text in enumerate(pages, start=1)]


# ------------------------------------------------------------------ .odt (odfpy)


def _odt(data: bytes, budget: TextBudget) -> list[Section]:
    from odf import teletype
    from odf.namespaces import FONS, STYLENS, TEXTNS
    from odf.opendocument import load

    document = load(io.BytesIO(data))
    styles: dict[str, tuple[str, str, str]] = {}  # name -> (parent, break-before, break-after)
    for container in (document.styles, document.automaticstyles):
        for style in container.getElementsByType(_odf_style_element()):
            name = style.getAttrNS(STYLENS, "name") or ""
            before = after = ""
            for child in style.childNodes:
                if getattr(child, "qname", None) == (STYLENS, "paragraph-properties"):
                    before = child.getAttrNS(FONS, "break-before") or ""
                    after = child.getAttrNS(FONS, "break-after") or ""
            styles[name] = (style.getAttrNS(STYLENS, "parent-style-name") or "", before, after)

    def breaks(name: str, which: int) -> bool:
        seen = set()
        while name and name not in seen:
            seen.add(name)
            parent, before, after = styles.get(name, ("", "", ""))
            value = (before, after)[which]
            if value:
                return value == "page"
            name = parent
        return False

    pages: list[list[str]] = [[]]
    recorded = False

    def new_page() -> None:
        nonlocal recorded
        recorded = True
        pages.append([])

    def soft_breaks_inside(node) -> int:
        return sum(1 for _ in node.getElementsByType(_odf_soft_break_element()))

    def visit(node) -> None:
        for child in node.childNodes:
            qname = getattr(child, "qname", None)
            if qname == (TEXTNS, "soft-page-break"):
                new_page()
            elif qname in ((TEXTNS, "p"), (TEXTNS, "h")):
                style = child.getAttrNS(TEXTNS, "style-name") or ""
                if breaks(style, 0) and any(t.strip() for t in pages[-1]):
                    new_page()
                pages[-1].append(budget.take(teletype.extractText(child)))
                # A paragraph split across pages is cited at the page where it starts.
                for _ in range(soft_breaks_inside(child)):
                    new_page()
                if breaks(style, 1):
                    new_page()
            elif qname is not None:
                visit(child)

    visit(document.text)
    return _paged(["\n".join(p) for p in pages], recorded)


def _odf_style_element():
    from odf.style import Style

    return Style


def _odf_soft_break_element():
    from odf.text import SoftPageBreak

    return SoftPageBreak


# ------------------------------------------------------------------ .rtf (striprtf)

# `\page` (not `\pagebb`, `\pagew…`), preceded by an even number of backslashes so an escaped `\\page`
# in the text is left alone; it becomes `\page` followed by a form feed (`\u12?`) that survives striprtf.
_RTF_PAGE = re.compile(r"(?<!\\)((?:\\\\)*)\\page(?![a-zA-Z])(-?\d+)? ?")


def _rtf(data: bytes, budget: TextBudget) -> list[Section]:
    from striprtf.striprtf import rtf_to_text

    source = data.decode("latin-1")  # RTF is 7-bit; higher characters are \'xx escapes or \u control words
    if not source.lstrip().startswith("{\\rtf"):
        raise ParseError("This file is not a Rich Text Format document (it does not start with {\\rtf).")
    marked = _RTF_PAGE.sub(lambda m: f"{m.group(1)}\\page\\u12?", source)
    text = budget.take(rtf_to_text(marked, errors="replace"))
    pages = text.split("\x0c")
    return _paged(pages, recorded=len(pages) > 1)


# ------------------------------------------------------------------ .doc (olefile + the piece table)

_DOC_DROP = dict.fromkeys(map(ord, "\x01\x02\x03\x04\x05\x06\x08\x1f"), None)
_DOC_MAP = {ord("\r"): "\n", ord("\x07"): "\n", ord("\x0b"): "\n", ord("\x1e"): "-"}


def _doc(data: bytes, budget: TextBudget) -> list[Section]:
    """Word 97-2003 text through its piece table ([MS-DOC] 2.4.1), read with olefile.

    Hand-written because no maintained pure-Python .doc reader exists on PyPI (the known ones drive the
    antiword or LibreOffice programs); olefile does the container, this reads the text stream.
    """
    import olefile

    try:
        ole = olefile.OleFileIO(data)
    except OSError as exc:
        raise ParseError("This file is not a Word 97-2003 document (.doc). A newer Word file is .docx; "
                         "save it as .docx or PDF and upload that.") from exc
    with ole:
        if not ole.exists("WordDocument"):
            raise ParseError("This file has no Word document inside (.doc); save it as .docx or PDF.")
        word = ole.openstream("WordDocument").read()
        if len(word) < 0x200 or struct.unpack_from("<H", word, 0)[0] != 0xA5EC:
            raise ParseError("This .doc file is damaged: its Word header is missing.")
        n_fib, flags = struct.unpack_from("<H", word, 2)[0], struct.unpack_from("<H", word, 0x0A)[0]
        if flags & 0x0100:
            raise ParseError("This Word document is password-protected; upload an unlocked copy.")
        if n_fib < 0xC1:
            raise ParseError("This .doc was saved by Word 95 or older, which cannot be read; save it as .docx.")
        table_name = "1Table" if flags & 0x0200 else "0Table"
        if not ole.exists(table_name):
            raise ParseError("This .doc file is damaged: its table stream is missing.")
        table = ole.openstream(table_name).read()
    text = _doc_text(word, table, budget)
    pages = _doc_clean(text).split("\x0c")
    return _paged(pages, recorded=len(pages) > 1)


def _doc_text(word: bytes, table: bytes, budget: TextBudget) -> str:
    csw = struct.unpack_from("<H", word, 32)[0]
    lw_at = 34 + csw * 2 + 2
    cslw = struct.unpack_from("<H", word, lw_at - 2)[0]
    ccp_text = struct.unpack_from("<i", word, lw_at + 3 * 4)[0]
    fc_lcb_at = lw_at + cslw * 4 + 2
    fc_clx, lcb_clx = struct.unpack_from("<II", word, fc_lcb_at + 33 * 8)
    clx = table[fc_clx:fc_clx + lcb_clx]
    at = 0
    while at < len(clx) and clx[at] == 0x01:  # Prc: formatting we do not need
        at += 3 + struct.unpack_from("<H", clx, at + 1)[0]
    if at + 5 > len(clx) or clx[at] != 0x02:
        raise ParseError("This .doc file is damaged: its piece table is missing.")
    lcb = struct.unpack_from("<I", clx, at + 1)[0]
    plc = clx[at + 5:at + 5 + lcb]
    count = (lcb - 4) // 12
    cps = struct.unpack_from(f"<{count + 1}i", plc, 0)
    parts: list[str] = []
    # The main document comes first; footnotes, headers and text boxes follow it, so reading stops at its end.
    # Pieces may point at the same bytes again and again: each is taken through the budget.
    wanted = max(ccp_text, 0)
    for index in range(count):
        if wanted <= 0:
            break
        fc = struct.unpack_from("<I", plc, 4 * (count + 1) + 8 * index + 2)[0]
        length = min(cps[index + 1] - cps[index], wanted)
        if fc & 0x40000000:  # "compressed": one byte per character, Windows-1252
            start = (fc & 0x3FFFFFFF) // 2
            piece = word[start:start + length].decode("cp1252", errors="replace")
        else:
            piece = word[fc:fc + 2 * length].decode("utf-16-le", errors="replace")
        parts.append(budget.take(piece))
        wanted -= len(piece)
    return "".join(parts)[:ccp_text]


def _doc_clean(text: str) -> str:
    """Drop field codes (keep their results), objects and marks; paragraphs and cells become lines."""
    out: list[str] = []
    fields: list[bool] = []  # per open field: True once past its separator (showing its result)
    for char in text:
        if char == "\x13":
            fields.append(False)
        elif char == "\x14":
            if fields:
                fields[-1] = True
        elif char == "\x15":
            if fields:
                fields.pop()
        elif all(fields):
            out.append(char)
    return "".join(out).translate(_DOC_DROP).translate(_DOC_MAP)


# ------------------------------------------------------------------ images (OCR)

OCR_TIMEOUT_SECONDS = 120


def _image(data: bytes, budget: TextBudget) -> list[Section]:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as picture:
            picture.load()
            png = io.BytesIO()
            picture.convert("RGB").save(png, format="PNG")  # tesseract reads PNG whatever came in
    except (UnidentifiedImageError, OSError) as exc:
        raise ParseError("This file is not an image that can be read.") from exc
    program = shutil.which("tesseract")
    if program is None:
        raise ParseError("Text in images is read with OCR, and this server has no OCR program (tesseract) "
                         "installed. Ask the operator to install tesseract-ocr, then ingest the image again.")
    languages = _ocr_languages(program)
    try:
        done = subprocess.run(  # noqa: S603 - fixed program, arguments are not user input
            [program, "stdin", "stdout", "-l", languages], input=png.getvalue(), capture_output=True,
            timeout=OCR_TIMEOUT_SECONDS, check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ParseError(f"Reading the text in this image took longer than {OCR_TIMEOUT_SECONDS} s.") from exc
    if done.returncode != 0:
        raise ParseError("The OCR program could not read this image.")
    text = done.stdout.decode("utf-8", errors="replace").replace("\x0c", "").strip()
    if not text:
        raise ParseError("No text was found in this image, so there is nothing to search.")
    return [Section(budget.take(text))]


def _ocr_languages(program: str) -> str:
    """Every language the deployment installed for tesseract (a Spanish pack makes Spanish readable)."""
    try:
        listed = subprocess.run([program, "--list-langs"], capture_output=True, timeout=20,  # noqa: S603
                                check=False).stdout.decode()
    except subprocess.TimeoutExpired:
        return "eng"
    langs = [line.strip() for line in listed.splitlines()[1:] if line.strip() and line.strip() != "osd"]
    return "+".join(sorted(langs)) or "eng"


_PARSERS: dict[str, Callable[[bytes, TextBudget], list[Section]]] = {
    DocumentKind.TEXT: _text,
    DocumentKind.MARKDOWN: _text,
    DocumentKind.HTML: _html,
    DocumentKind.CSV: _csv,
    DocumentKind.XLSX: _xlsx,
    DocumentKind.DOCX: _docx,
    DocumentKind.PDF: _pdf,
    DocumentKind.PRESENTATION: _pptx,
    DocumentKind.ODT: _odt,
    DocumentKind.RTF: _rtf,
    DocumentKind.DOC: _doc,
    DocumentKind.IMAGE: _image,
}


# ------------------------------------------------------------------ chunking

CHUNK_CHARS = 1000


@dataclass(frozen=True)
class Piece:
    text: str
    page: int | None


def chunk(sections: list[Section], size: int = CHUNK_CHARS, *, limit: int | None = None) -> list[Piece]:
    """Split into pieces of at most ~`size` characters, never across pages, preferring paragraph and then
    line and sentence boundaries. No overlap: neighbours are contiguous, so parent context can grow a
    passage outward without repeating text. More than `limit` pieces raises `ParseError` (as soon as one more
    is made, not after all of them)."""
    pieces: list[Piece] = []
    for section in sections:
        for text in _split(section.text.strip(), size):
            if text.strip():
                if limit is not None and len(pieces) >= limit:
                    raise ParseError(f"This file makes more than {limit:,} passages, the most one document may "
                                     "have; nothing was stored. Split it into smaller files.")
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
