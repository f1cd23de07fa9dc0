"""evalcore.textfiles: strict lines, gzip under a cap, safe JSON lines; every problem a FormatError at its line."""

from __future__ import annotations

import gzip
import time
import zlib
from pathlib import Path

import pytest

from evalcore.errors import FormatError
from evalcore.textfiles import byte_size, json_object, text_lines


def gzip_of_zeros(mebibytes: int) -> bytes:
    """Gzip of `mebibytes` MiB of zeros, compressed a MiB at a time (about 1 KiB per MiB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip header and trailer
    chunk = bytes(1 << 20)
    return b"".join(compressor.compress(chunk) for _ in range(mebibytes)) + compressor.flush()


def gzip_bomb(path: Path, *, gibibytes: int) -> Path:
    """A gzip file that expands to `gibibytes` GiB of zeros, about 1 MiB per GiB: one compressed MiB written
    again and again as gzip members (still one valid gzip file), built in milliseconds, not minutes."""
    member = gzip_of_zeros(1)
    with path.open("wb") as out:
        for _ in range(gibibytes):
            out.write(member * 1024)
    return path


class DecompressedBytes:
    """Counts what gzip decompressed, by wrapping GzipFile.readinto (it still does the work)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.total = 0
        readinto = gzip.GzipFile.readinto

        def counting(handle: gzip.GzipFile, buffer: bytearray | memoryview) -> int:
            count = readinto(handle, buffer)
            self.total += count
            return count

        monkeypatch.setattr(gzip.GzipFile, "readinto", counting)


class TestDecompression:
    def test_it_reads_a_gzipped_file_under_the_cap(self, tmp_path: Path) -> None:
        path = tmp_path / "lines.txt.gz"
        path.write_bytes(gzip.compress(b"one\ntwo\n"))
        assert list(text_lines(path, decompress=True, max_decompressed_bytes=8)) == [
            (1, "one\n"),
            (2, "two\n"),
        ]

    def test_it_stops_decompressing_as_soon_as_the_cap_is_passed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = gzip_bomb(tmp_path / "bomb.jsonl.gz", gibibytes=4)
        assert path.stat().st_size < 5 << 20
        decompressed = DecompressedBytes(monkeypatch)
        started = time.perf_counter()
        with pytest.raises(FormatError) as error:
            list(text_lines(path, decompress=True, max_decompressed_bytes=256 << 10))
        elapsed = time.perf_counter() - started
        assert (error.value.path, error.value.line) == (str(path), 1)
        assert error.value.reason == "decompresses to more than 256 KiB, the most accepted"
        assert decompressed.total <= (256 << 10) + (64 << 10), "read no more than one buffer past the cap"
        assert elapsed < 0.5, f"took {elapsed:.2f} s"

    def test_it_names_the_line_where_a_cut_short_file_ends(self, tmp_path: Path) -> None:
        whole = gzip.compress("".join(f"line {i} {i * 7919 % 104729}\n" for i in range(20_000)).encode())
        path = tmp_path / "cut.txt.gz"
        path.write_bytes(whole[: len(whole) // 2])
        with pytest.raises(FormatError) as error:
            list(text_lines(path, decompress=True))
        assert error.value.line is not None and 1 < error.value.line < 20_000
        assert error.value.reason.startswith("not a readable gzip file (Compressed file ended")

    def test_it_refuses_a_file_named_gz_that_is_not_gzip(self, tmp_path: Path) -> None:
        path = tmp_path / "plain.jsonl.gz"
        path.write_text('{"doc_id": "d1", "text": "x"}\n')
        with pytest.raises(FormatError) as error:
            list(text_lines(path, decompress=True))
        assert (error.value.line, error.value.reason) == (
            1,
            "not a readable gzip file (Not a gzipped file (b'{\"'))",
        )

    def test_it_refuses_gzip_where_only_plain_text_is_read(self, tmp_path: Path) -> None:
        path = tmp_path / "pairs.tsv"
        path.write_bytes(gzip.compress(b"q1\td1\n"))
        with pytest.raises(
            FormatError, match=r"pairs.tsv:1: the file is gzip-compressed; decompress it first"
        ):
            list(text_lines(path))


class TestDecoding:
    def test_it_names_the_line_that_is_not_utf8(self, tmp_path: Path) -> None:
        path = tmp_path / "topics.tsv"
        path.write_bytes(b"q1\tfine\nq2\tcaf\xe9\n")
        with pytest.raises(FormatError) as error:
            list(text_lines(path))
        assert (error.value.line, error.value.reason) == (2, "not UTF-8 text (invalid continuation byte)")

    def test_it_refuses_a_line_over_the_limit(self, tmp_path: Path) -> None:
        path = tmp_path / "long.txt"
        path.write_bytes(b"short\n" + b"x" * 5000 + b"\n")
        with pytest.raises(FormatError, match=r"long.txt:2: a line longer than 4 KiB"):
            list(text_lines(path, max_line_bytes=4096))


class TestJsonObject:
    def test_it_refuses_json_nested_too_deeply_for_python(self) -> None:
        line = '{"doc_id": "d1", "text": ' + "[" * 100_000 + "]" * 100_000 + "}"
        with pytest.raises(ValueError, match="JSON nested too deeply"):
            json_object(line)

    def test_it_refuses_an_unpaired_surrogate_but_reads_a_pair(self) -> None:
        with pytest.raises(ValueError, match=r'"text" holds an unpaired surrogate escape'):
            json_object('{"text": "caf\\udce9"}')
        assert json_object('{"text": "smile \\ud83d\\ude00"}') == {"text": "smile \U0001f600"}

    def test_it_refuses_anything_but_an_object(self) -> None:
        with pytest.raises(ValueError, match="each line must be a JSON object"):
            json_object('["d1", "text"]')


def test_it_writes_sizes_for_people() -> None:
    assert [byte_size(n) for n in (1, 900, 1024, 1536, 512 << 20, 4 << 30)] == [
        "1 byte", "900 bytes", "1 KiB", "1.5 KiB", "512 MiB", "4 GiB",
    ]  # fmt: skip
