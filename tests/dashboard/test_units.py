"""The dashboard's pure parts: the Quotas chart's arithmetic, the session
cookie's signature, the PKCE challenge, and the field attribution."""

from __future__ import annotations

import base64
import hashlib

import pytest

from benchwarmers.dashboard import auth, chart, signin
from benchwarmers.dashboard.fields import FieldError, field, names, number, switch, text
from benchwarmers.errors import NotFound, UserError

pytestmark = pytest.mark.unit


def days(series: dict[str, dict[str, int]]) -> dict[str, object]:
    return {
        "month": "2026-02",
        "days_in_month": 28,
        "series": {e: {d: {"tokens": t, "requests": 1} for d, t in v.items()} for e, v in series.items()},
    }


def test_the_chart_stacks_endpoints_per_day_under_a_round_scale() -> None:
    drawn = chart.usage_chart(days({"a": {"2026-02-01": 300, "2026-02-03": 50}, "b": {"2026-02-01": 200}}))
    assert not drawn.empty and [label for _, label in drawn.ticks] == ["0", "250", "500"]
    first_day = [bar for bar in drawn.bars if bar.x == drawn.bars[0].x]
    assert [bar.series for bar in first_day] == [0, 1]
    # Stacked: b sits on a, and the two reach the top of the scale (500 tokens).
    a, b = first_day
    assert b.y + b.height == pytest.approx(a.y, abs=0.2)
    assert a.height + b.height == pytest.approx(drawn.baseline - chart.TOP, abs=0.3)
    third = [bar for bar in drawn.bars if bar.title.startswith("a, 2026-02-03")]
    assert third[0].height == pytest.approx((drawn.baseline - chart.TOP) / 10, abs=0.2)
    assert [label for _, label in drawn.days] == ["1", "5", "10", "15", "20", "25"]
    assert drawn.legend == [(0, "a"), (1, "b")]
    assert "a, 2026-02-01: 300 tokens" in [bar.title for bar in drawn.bars]


def test_an_empty_month_draws_an_empty_chart() -> None:
    drawn = chart.usage_chart(days({}))
    assert drawn.empty and drawn.bars == [] and drawn.legend == []


def test_a_session_cookie_is_bound_to_its_key() -> None:
    """The cookie carries the session's token, signed: a cookie not signed
    under the current key (or none: no password set) names no session. Its
    expiry and its end are the store's (`tests/identity/test_sessions.py`)."""
    cookie = auth._sign("token-1", b"key-one")
    assert auth._session_token(cookie, b"key-one") == "token-1"
    assert auth._session_token(cookie, b"key-two") == ""
    mac = cookie.partition(".")[2]
    altered = base64.urlsafe_b64encode(b"token-2").decode().rstrip("=")
    assert auth._session_token(f"{altered}.{mac}", b"key-one") == ""
    assert auth._session_token("garbage", b"key-one") == ""
    assert auth._session_token(cookie, b"") == ""  # no password set: no session holds


def test_the_pkce_challenge_is_the_verifiers_s256_digest() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"  # RFC 7636, appendix B
    assert signin.challenge_of(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    assert signin.challenge_of(verifier) == digest
    url = signin.PROVIDERS["openrouter"].authorize_url("http://127.0.0.1:8122/cb?state=s", "CH")
    assert url.startswith("https://openrouter.ai/auth?callback_url=http%3A%2F%2F127.0.0.1%3A8122%2Fcb")
    assert "code_challenge=CH" in url and "code_challenge_method=S256" in url


def test_a_refusal_is_attributed_to_the_field_it_came_from() -> None:
    with pytest.raises(FieldError) as caught, field("name"):
        raise NotFound("no such thing")
    assert caught.value.field == "name" and caught.value.status == 404
    with pytest.raises(FieldError) as kept, field("outer"), field("inner"):
        raise UserError("bad")
    assert kept.value.field == "inner"
    assert text({"a": "  x "}, "a") == "x"
    assert names({"m": "a, b  c"}, "m") == ["a", "b", "c"]
    assert number({"n": "2"}, "n") == 2 and number({"n": ""}, "n") is None
    for bad in ({"n": "1.5"}, {"n": "-1"}, {"n": True}, {"n": "nan"}):
        with pytest.raises(FieldError):
            number(bad, "n")
    with pytest.raises(FieldError):
        text({"a": ""}, "a", required=True)


def test_the_chart_draws_usd_too_under_a_round_dollar_scale() -> None:
    spent = {
        "month": "2026-02",
        "days_in_month": 28,
        "series": {
            "a": {"2026-02-01": {"tokens": 900, "usd": 0.03, "unpriced": 0}},
            "b": {
                "2026-02-01": {"tokens": 100, "usd": 0.012, "unpriced": 2},
                "2026-02-02": {"tokens": 5, "usd": 0},
            },
        },
    }
    drawn = chart.usage_chart(spent, "usd")
    assert [label for _, label in drawn.ticks] == ["$0", "$0.025", "$0.05"]
    titles = [bar.title for bar in drawn.bars]
    assert titles == ["a, 2026-02-01: $0.03", "b, 2026-02-01: $0.012 + 2 calls of unknown price"]
    a, _b = drawn.bars
    assert a.height == pytest.approx((drawn.baseline - chart.TOP) * 0.6, abs=0.3)  # $0.03 of $0.05
    tokens = chart.usage_chart(spent, "tokens")
    assert len(tokens.bars) == 3 and [label for _, label in tokens.ticks][-1] == "1k"


def test_a_switch_is_true_or_false_or_left_out() -> None:
    assert switch({"merged": True}, "merged") is True
    assert switch({"merged": False}, "merged") is False
    assert switch({}, "merged") is None
    for wrong in ("false", "yes", 1, 0, None, []):
        with pytest.raises(FieldError) as refused:
            switch({"merged": wrong}, "merged")
        assert refused.value.field == "merged" and "true or false" in str(refused.value)
