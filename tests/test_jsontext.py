"""JSON through orjson with the standard library's answer (`benchwarmers.jsontext`)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchwarmers import jsontext

pytestmark = pytest.mark.unit

# Any JSON value json can write and read back equal: integers of any size, finite
# floats, text with lone surrogates too.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_what_json_reads_is_read_the_same(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
        assert jsontext.loads(text) == json.loads(text)
        assert jsontext.loads(text.encode("utf-8", "surrogatepass")) == json.loads(
            text.encode("utf-8", "surrogatepass")
        )


@given(JSON_VALUES)
def test_what_is_written_reads_back_equal(value: Any) -> None:
    assert json.loads(jsontext.dumps(value)) == value


def test_an_integer_past_64_bits_is_read_exactly_not_as_a_float() -> None:
    big = 2**70 + 1
    assert jsontext.loads(f'{{"n": {big}}}') == {"n": big}
    assert jsontext.loads(f"[{-big}]".encode()) == [-big]
    assert jsontext.dumps({"n": big}) == f'{{"n":{big}}}'.encode()


def test_what_orjson_refuses_is_read_by_the_slow_reader() -> None:
    assert math.isnan(jsontext.loads(b'{"t": NaN}')["t"])  # json.loads reads it
    assert jsontext.loads('"\\ud800"') == "\ud800"
    refused: list[bytes] = []

    def strict(raw: bytes) -> Any:
        refused.append(raw)
        raise ValueError("refused")

    for raw in (b'{"t": NaN}', b'"\\udc00"', b"\xef\xbb\xbf{}", b'{"t": Infinity}', b"[1, 2"):
        with pytest.raises(ValueError, match="refused"):
            jsontext.loads(raw, slow=strict)
    assert len(refused) == 5
    assert jsontext.loads(b'{"a": [1, 2.5, "\xc3\xa9"]}', slow=strict) == {"a": [1, 2.5, "é"]}


def test_written_compact_utf8_and_what_orjson_cannot_write_as_json_would() -> None:
    assert jsontext.dumps({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'.encode()
    assert jsontext.dumps({1: "x", None: 2}) == b'{"1":"x","null":2}'
    assert jsontext.dumps("\ud800") == b'"\\ud800"'  # a lone surrogate, escaped: always encodable
    assert jsontext.dumps(float("nan")) == b"null"
    with pytest.raises(TypeError):
        jsontext.dumps(object())
