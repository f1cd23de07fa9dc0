"""The CSV readers' shared pieces: text columns read as codes per block, joined with plain ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from evalcore.csvfiles import CsvSchema, encode_column, read_csv, unify_codes


def _blocks(*blocks: list[bytes]) -> pa.ChunkedArray:
    """A text column read as codes: a dictionary per block, as the CSV reader makes them."""
    return pa.chunked_array([pa.array(b, pa.binary()).dictionary_encode() for b in blocks])


def test_it_joins_plain_and_coded_columns_as_one_hash_table_does() -> None:
    rng = np.random.default_rng(5)
    words = [f"i{n}".encode() for n in rng.integers(0, 40, 300)]
    plain = pa.chunked_array([pa.array(words[:50], pa.binary()), pa.array(words[50:80], pa.binary())])
    coded = _blocks(words[80:150], [], words[150:260])
    later = _blocks(words[260:])
    values, codes = unify_codes([plain, coded, later])
    expected_values, expected = encode_column(pa.chunked_array([pa.array(words, pa.binary())]))
    assert values.to_pylist() == expected_values.to_pylist()
    assert np.concatenate(codes).tolist() == expected.tolist()
    assert [c.dtype for c in codes] == [np.int32] * 3 and [len(c) for c in codes] == [80, 180, 40]


def test_it_reads_a_code_column_with_a_dictionary_per_block(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("user,item\nu1,b\nu1,a\nu2,b\n")
    table = read_csv(path, CsvSchema({"user": "text", "item": "code"}, ("user", "item")))
    assert pa.types.is_dictionary(table.column("item").type)
    assert table.text("item", 1) == "a"
    values, (codes,) = unify_codes([table.column("item")])
    assert values.to_pylist() == [b"b", b"a"] and codes.tolist() == [0, 1, 0]
    assert unify_codes([pa.chunked_array([], pa.binary())])[1][0].tolist() == []
