"""Small fixture files of every ingestible format, generated in the test (nothing binary is checked in)."""

from __future__ import annotations

import io
import struct


def pdf(pages: list[str]) -> bytes:
    """A real PDF with one text page per entry (Helvetica, uncompressed content streams)."""
    objects: list[bytes] = []
    page_ids = []
    font_id = 3
    next_id = 4
    page_objs: list[tuple[int, int, bytes]] = []
    for text in pages:
        lines = text.splitlines() or [""]
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        page_id, content_id = next_id, next_id + 1
        next_id += 2
        page_ids.append(page_id)
        page_objs.append((page_id, content_id, stream))
    kids = " ".join(f"{i} 0 R" for i in page_ids)
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(page_ids)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for _page_id, content_id, stream in page_objs:
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 {font_id} 0 R >> >> "
            f"/Contents {content_id} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def docx(paragraphs: list[str]) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx(rows: list[list[object]], title: str = "Prices") -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = title
    for row in rows:
        sheet.append(row)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def pptx(slides: list[str]) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for text in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = text
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def odt(pages: list[str], *, soft_breaks: bool = True, break_style: bool = False) -> bytes:
    """An OpenDocument text written by odfpy: pages separated by the soft page breaks LibreOffice writes,
    or (break_style) by a paragraph style with fo:break-before="page"; neither → a file with no layout."""
    from odf.opendocument import OpenDocumentText
    from odf.style import ParagraphProperties, Style
    from odf.text import P, SoftPageBreak

    document = OpenDocumentText()
    new_page = Style(name="NewPage", family="paragraph")
    new_page.addElement(ParagraphProperties(breakbefore="page"))
    document.automaticstyles.addElement(new_page)
    for number, page in enumerate(pages):
        if number and soft_breaks:
            document.text.addElement(SoftPageBreak())
        for line_number, line in enumerate(page.splitlines()):
            starts_page = number and break_style and line_number == 0
            document.text.addElement(P(stylename=new_page, text=line) if starts_page else P(text=line))
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def rtf(pages: list[str]) -> bytes:
    """A Rich Text Format file with a \\page between pages (accents as \\'xx escapes)."""
    def escape(text: str) -> str:
        out = text.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}")
        return "".join(c if ord(c) < 128 else f"\\'{ord(c):02x}" for c in out)

    body = "\\page\n".join("".join(f"{escape(line)}\\par\n" for line in page.splitlines()) for page in pages)
    return ("{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0 Arial;}}\\f0\\fs24\n" + body + "}").encode("latin-1")


def doc(pages: list[str], *, field: str = "") -> bytes:
    """A minimal Word 97-2003 file: a FIB, a two-piece table (one 8-bit piece, one UTF-16 piece) and the
    text, in an OLE compound file. Paragraphs end with \\r, pages are separated by \\x0c. `field` adds a
    hyperlink field whose code must not appear in the text and whose result must."""
    text = "\x0c".join("".join(f"{line}\r" for line in page.splitlines()) for page in pages)
    if field:
        text += f'\x13 HYPERLINK "https://example.com/{field}" \x14{field}\x15\r'
    half = len(text) // 2
    first, second = text[:half].encode("cp1252"), text[half:].encode("utf-16-le")
    word = bytearray(0x800)
    struct.pack_into("<HH", word, 0, 0xA5EC, 0x00C1)
    struct.pack_into("<H", word, 0x0A, 0x0200)  # fWhichTblStm: the table is "1Table"
    struct.pack_into("<H", word, 32, 14)  # csw
    struct.pack_into("<H", word, 62, 22)  # cslw
    struct.pack_into("<i", word, 76, len(text))  # ccpText
    struct.pack_into("<H", word, 152, 0x5D)  # cbRgFcLcb
    first_at = len(word)
    word += first
    if len(word) % 2:
        word += b"\x00"
    second_at = len(word)
    word += second
    pieces = [(0, half, (first_at * 2) | 0x40000000), (half, len(text), second_at)]
    plc = struct.pack("<3i", 0, half, len(text)) + b"".join(struct.pack("<HIH", 0, fc, 0) for _, _, fc in pieces)
    clx = b"\x02" + struct.pack("<I", len(plc)) + plc
    struct.pack_into("<II", word, 154 + 33 * 8, 0, len(clx))  # fcClx (at 0 in 1Table), lcbClx
    return _compound_file({"WordDocument": bytes(word), "1Table": clx})


def _compound_file(streams: dict[str, bytes]) -> bytes:
    """An OLE compound file (version 3, 512-byte sectors) holding `streams`, each padded past the 4,096-byte
    mini-stream cutoff so every stream lives in ordinary sectors."""
    end, free, fat_sector, no_stream = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD, 0xFFFFFFFF
    fat = [fat_sector, end]  # sector 0: the FAT, sector 1: the directory
    body = b""
    entries = []
    for name, content in streams.items():
        padded = content.ljust(max(4096, -(-len(content) // 512) * 512), b"\x00")
        start, count = len(fat), len(padded) // 512
        fat += [start + i + 1 for i in range(count - 1)] + [end]
        body += padded
        entries.append((name, start, max(4096, len(content))))
    assert len(fat) <= 128

    def entry(name: str, kind: int, left: int, right: int, child: int, start: int, size: int) -> bytes:
        encoded = (name + "\x00").encode("utf-16-le") if name else b""
        return (encoded.ljust(64, b"\x00") + struct.pack("<HBB3I", len(encoded), kind, 1, left, right, child)
                + b"\x00" * 36 + struct.pack("<3I", start, size, 0))

    directory = entry("Root Entry", 5, no_stream, no_stream, 1, end, 0)
    for index, (name, start, size) in enumerate(entries, start=1):
        right = index + 1 if index < len(entries) else no_stream
        directory += entry(name, 2, no_stream, right, no_stream, start, size)
    directory = directory.ljust(512, b"\x00")
    fat_bytes = struct.pack(f"<{len(fat)}I", *fat) + struct.pack("<I", free) * (128 - len(fat))
    header = (bytes.fromhex("D0CF11E0A1B11AE1") + b"\x00" * 16
              + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6) + b"\x00" * 6
              + struct.pack("<IIIIIIIII", 0, 1, 1, 0, 4096, end, 0, end, 0)
              + struct.pack("<I", 0) + struct.pack("<I", free) * 108)
    assert len(header) == 512
    return header + fat_bytes + directory + body


def image(text: str) -> bytes:
    """A PNG with `text` drawn large and black on white (what a scanned page looks like to OCR)."""
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.new("RGB", (1400, 120 * (text.count("\n") + 1) + 60), "white")
    ImageDraw.Draw(picture).multiline_text((40, 40), text, fill="black", font=ImageFont.load_default(size=56),
                                           spacing=30)
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()
