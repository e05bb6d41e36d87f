"""A long text as one clip: split where a reader pauses, spoken in order, joined into one file.

The split prefers a paragraph break, then the end of a sentence, then a space, and cuts mid-word only for a
"word" longer than the limit. MP3 chunks are concatenated (an MP3 stream is a sequence of frames, so players
read the joined bytes as one clip); WAV is asked of every provider as raw 24 kHz 16-bit mono PCM and wrapped
under one RIFF header here, so the chunks cannot disagree on a header.
"""

from __future__ import annotations

import re
import struct

SAMPLE_RATE = 24_000
SAMPLE_WIDTH = 2  # bytes: 16-bit signed little-endian, what OpenAI, ElevenLabs and Gemini answer as PCM
CHANNELS = 1
_SENTENCE_END = re.compile(r"[.!?…。！？][\"')\]»”’]*\s+")


def _cut_at(text: str, limit: int) -> int:
    """Where to end the first chunk of `text` (longer than `limit`)."""
    window = text[: limit + 1]
    paragraph = window.rfind("\n\n", 0, limit)
    if paragraph > limit // 4:
        return paragraph + 2
    sentences = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= limit]
    if sentences and sentences[-1] > limit // 4:
        return sentences[-1]
    space = window.rfind(" ", 0, limit + 1)
    if space > 0:
        return space + 1
    return limit


def split(text: str, limit: int) -> list[str]:
    """`text` in chunks of at most `limit` characters, in order, none empty."""
    chunks: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = _cut_at(rest, limit)
        piece = rest[:cut].strip()
        if piece:
            chunks.append(piece)
        rest = rest[cut:].strip()
    if rest:
        chunks.append(rest)
    return chunks


def pcm_seconds(pcm: bytes) -> float:
    return len(pcm) / (SAMPLE_RATE * SAMPLE_WIDTH * CHANNELS)


def wav(pcm: bytes) -> bytes:
    """24 kHz 16-bit mono PCM under one canonical 44-byte RIFF/WAVE header."""
    byte_rate = SAMPLE_RATE * SAMPLE_WIDTH * CHANNELS
    header = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, CHANNELS, SAMPLE_RATE, byte_rate, SAMPLE_WIDTH * CHANNELS,
                                    SAMPLE_WIDTH * 8)
    return header + b"data" + struct.pack("<I", len(pcm)) + pcm


def looks_like_mp3(data: bytes) -> bool:
    """An ID3 tag or an MPEG audio frame sync at the start: what an MP3 answer begins with."""
    return data[:3] == b"ID3" or (len(data) > 1 and data[0] == 0xFF and (data[1] & 0xE0) == 0xE0)


def join(chunks: list[bytes], output_format: str) -> bytes:
    if output_format == "wav":
        return wav(b"".join(chunks))
    return b"".join(chunks)
