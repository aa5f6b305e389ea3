"""Every table, in one place, so a migration can be generated from it and a
reader sees the whole store at once.

What is never stored, by design: endpoint keys (they live in the environment
or llm's `keys.json`), the prompt text of gateway requests (unless a
collection's owner turned `keep_text` on: then `kept_texts` holds it until
it expires), and images. The call log keeps who answered, how fast and how
well; never what was asked.
Task answers of the suite and probe replies are ours (our own prompts), so
they are kept as evidence.

Times are timezone-aware UTC. JSON columns hold small structured facts
(member lists in history, learned limits), never free text from a client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSON,
        list[Any]: JSON,
        datetime: DateTime(timezone=True),
    }
    # Named constraints, so later migrations can drop or alter them (SQLite batch mode needs names).
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_N_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


# ------------------------------------------------------------- the bench


class Endpoint(Base):
    """A connection to a provider. The key is found by `name` (keys.py)."""

    __tablename__ = "endpoints"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    base_url: Mapped[str] = mapped_column(String(500))
    api: Mapped[str] = mapped_column(String(16))  # types.ApiKind
    # Simulated endpoints (serve --demo, the fake provider) are labelled everywhere they show.
    simulated: Mapped[bool] = mapped_column(Boolean, default=False)
    # Whether the endpoint needs a key at all (local Ollama does not).
    needs_key: Mapped[bool] = mapped_column(Boolean, default=True)
    # Whom the provider's limits count: "key" (every model behind it shares them), "model"
    # (each its own), or "" to let `limits/scope.py` decide (known providers, then the headers).
    limit_scope: Mapped[str] = mapped_column(String(8), default="")
    # Since when no call could connect to it (None: the last call did); explorers skip it.
    unreachable_since: Mapped[datetime | None]
    created_at: Mapped[datetime]

    models: Mapped[list[Model]] = relationship(back_populates="endpoint")


class Model(Base):
    """A bench entry: an alias unique on the bench, served by one endpoint."""

    __tablename__ = "models"
    __table_args__ = (UniqueConstraint("endpoint_id", "served"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    alias: Mapped[str] = mapped_column(String(128), unique=True)
    endpoint_id: Mapped[int] = mapped_column(ForeignKey("endpoints.id", ondelete="RESTRICT"))
    served: Mapped[str] = mapped_column(String(256))
    role: Mapped[str] = mapped_column(String(16), default="general")  # types.ModelRole
    status: Mapped[str] = mapped_column(String(16), default="available")  # types.ModelStatus
    ad_hoc: Mapped[bool] = mapped_column(Boolean, default=False)
    # Catalog facts (catalog.py fills them; the user may override).
    context_window: Mapped[int | None] = mapped_column(Integer)
    output_limit: Mapped[int | None] = mapped_column(Integer)
    vision: Mapped[bool] = mapped_column(Boolean, default=False)
    tools: Mapped[bool] = mapped_column(Boolean, default=True)
    price_in: Mapped[float | None] = mapped_column(Float)  # USD per million tokens
    price_out: Mapped[float | None] = mapped_column(Float)
    # Status detail: until when a resting model rests; why a model was retired.
    resting_until: Mapped[datetime | None]
    status_reason: Mapped[str] = mapped_column(Text, default="")
    status_changed_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    # Calls in a row that failed by connection, 5xx or timeout (never a 429), since
    # `failing_since`; an answer clears both (`calls/health.py`). Seating holds a
    # model out once they reach `calls.health.FAILING_AFTER`, until a probe answers.
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    failing_since: Mapped[datetime | None]
    # Whether it answers in JSON (against a schema) when its API is asked to: the catalog's
    # `structured_output`, or the user's word; None = unknown, asked natively (`panel/output.py`).
    structured_output: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    # USD per million input tokens read from the provider's prompt cache (None: the input price).
    price_cached: Mapped[float | None] = mapped_column(Float)
    # Who set the prices: "catalog" (a refresh may change them) or "user" (a refresh leaves them).
    price_source: Mapped[str] = mapped_column(String(8), default="catalog", server_default="catalog")
    # When the catalog found this free model priced: a `free_only` collection seats it nowhere
    # until the user accepts the price (`benchwarmers model set ALIAS --paid-ok` clears it).
    went_paid_at: Mapped[datetime | None]

    endpoint: Mapped[Endpoint] = relationship(back_populates="models")


class ModelPrice(Base):
    """A model's prices from the moment they took effect (`at`): every change,
    by a catalog refresh or by the user, is a row, so what a call cost can be
    told at the price of its own time (`calls/cost.py`). USD per million tokens;
    None is unknown, never free."""

    __tablename__ = "model_prices"
    __table_args__ = (Index("ix_model_prices_alias_at", "alias", "at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    alias: Mapped[str] = mapped_column(String(128))
    at: Mapped[datetime]
    price_in: Mapped[float | None] = mapped_column(Float)
    price_out: Mapped[float | None] = mapped_column(Float)
    price_cached: Mapped[float | None] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(8), default="catalog")  # "catalog" | "user"


class Collection(Base):
    """A named panel, asked as `bench/<name>`."""

    __tablename__ = "collections"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    purpose: Mapped[str] = mapped_column(Text, default="")
    # Seats in all (members beyond `seats` are chosen by record); 0 = all members.
    seats: Mapped[int] = mapped_column(Integer, default=0)
    explorer_seats: Mapped[int] = mapped_column(Integer, default=0)
    # Explorer seats only for models that cost nothing (priced at zero, or price unknown).
    free_only: Mapped[bool] = mapped_column(Boolean, default=False)
    # Whether an explorer's find clearly better than a record seat takes it: "auto",
    # "suggest" (named in the decisions, the user decides) or "never" (`bench/decider.py`).
    promotion: Mapped[str] = mapped_column(String(8), default="suggest", server_default="suggest")
    reply: Mapped[str] = mapped_column(String(16), default="panel")  # types.ReplyMode
    merger_alias: Mapped[str] = mapped_column(String(128), default="")
    system_prompt: Mapped[str] = mapped_column(Text, default="")
    seat_timeout: Mapped[float] = mapped_column(Float, default=120.0)
    # Route mode: other members answer each turn in the background, for the record.
    shadow_seats: Mapped[int] = mapped_column(Integer, default=0)
    # Keep the question and the answers of its panels (`kept_texts`) for `keep_days`,
    # so they can be read and judged later. Off: no text of an ask is stored.
    keep_text: Mapped[bool] = mapped_column(Boolean, default=False)
    keep_days: Mapped[int] = mapped_column(Integer, default=30)
    # The Ask page shows its seats as "Seat A/B/C", shuffled, named once judged.
    blind: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime]
    # judges: after each panel ask a model that did not sit compares the answers; its pairs are
    # stored as kind "judge" and weighed by their agreement with people's (`panel/judge.py`).
    judge_verdicts: Mapped[bool] = mapped_column(Boolean, default=False)
    # structured: a member that cannot answer in JSON natively is "leave_off" (left off with
    # the reason) or "prompt" (asked with the schema in its system prompt); `panel/output.py`.
    output_fallback: Mapped[str] = mapped_column(String(16), default="leave_off", server_default="leave_off")
    # quorum (0012): answer once this many seats answered (0: every seat), or this many
    # seconds after the seats were sent (0: no deadline); the seats still answering then are
    # cancelled ("cancel") or left to finish in the background ("finish") (`panel/quorum.py`).
    quorum: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    deadline: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    on_cut: Mapped[str] = mapped_column(String(8), default="cancel", server_default="cancel")
    # budgets: which seats a budget that cannot pay for all keeps: "cheapest" first or by "record".
    budget_seating: Mapped[str] = mapped_column(String(8), default="cheapest", server_default="cheapest")

    members: Mapped[list[CollectionMember]] = relationship(
        back_populates="collection", order_by="CollectionMember.position", cascade="all, delete-orphan"
    )


class CollectionMember(Base):
    """A member always seated (subject to status, role and context window)."""

    __tablename__ = "collection_members"

    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collections.id", ondelete="CASCADE"), primary_key=True
    )
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, default=0)

    collection: Mapped[Collection] = relationship(back_populates="members")
    model: Mapped[Model] = relationship()


class SeatingHistory(Base):
    """Every change of who sits on a collection, dated, with its reason."""

    __tablename__ = "seating_history"

    id: Mapped[int] = mapped_column(primary_key=True)
    collection: Mapped[str] = mapped_column(String(64), index=True)
    shape: Mapped[str] = mapped_column(String(32), default="")
    at: Mapped[datetime]
    seated: Mapped[list[Any]]  # aliases, in seat order
    reason: Mapped[str] = mapped_column(Text, default="")


# ------------------------------------------------------ calls and verdicts


class Call(Base):
    """The call log: every outbound model call, written the moment it ends.

    `task` for a panel seat ends in "(bench/<name>, <shape>)". Never the
    prompt text of a gateway request, never images, never keys."""

    __tablename__ = "calls"
    __table_args__ = (
        # Every index is paid for on each insert by the call log's writer, so each one here is
        # what some read needs (revision 0002 says which), and none is a leftmost prefix of another.
        # An alias's recent answers, newest first (first byte, bench/evidence.py); its collections.
        Index("ix_calls_alias_at", "alias", "at"),
        # Seats per alias on one collection and shape, counted from the index alone (bench/seated.py);
        # its (collection) prefix serves the dashboard's recent asks of one collection.
        Index("ix_calls_seats", "collection", "shape", "kind", "alias", "at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # the call id, opaque
    # Indexed for the limits' "served since" reads (limits/ledger.py, quotas.py) and the month's usage.
    at: Mapped[datetime] = mapped_column(index=True)
    kind: Mapped[str] = mapped_column(String(16))  # types.CallKind
    alias: Mapped[str] = mapped_column(String(128))
    endpoint: Mapped[str] = mapped_column(String(64), default="")
    served: Mapped[str] = mapped_column(String(256), default="")
    task: Mapped[str] = mapped_column(Text, default="")
    collection: Mapped[str] = mapped_column(String(64), default="")
    shape: Mapped[str] = mapped_column(String(32), default="")
    seat: Mapped[str] = mapped_column(String(32), default="")  # seat label
    # Calls of one gateway ask (seats and merge) share an ask id (indexed: an ask's calls, read together).
    ask_id: Mapped[str] = mapped_column(String(40), default="", index=True)
    # Route mode: the conversation key the turn belongs to.
    conversation: Mapped[str] = mapped_column(String(80), default="")
    status: Mapped[str] = mapped_column(String(16))  # types.SeatStatus
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    first_byte_seconds: Mapped[float | None] = mapped_column(Float)
    tokens_in: Mapped[int] = mapped_column(Integer, default=0)
    tokens_out: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str] = mapped_column(Text, default="")
    explorer: Mapped[bool] = mapped_column(Boolean, default=False)
    # Of tokens_in, those read from the provider's prompt cache.
    tokens_cached: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # USD at the price in effect when it ran (`calls/cost.py`); None: the price was unknown.
    cost_usd: Mapped[float | None] = mapped_column(Float)
    # The gateway key that asked ("" for the owner and the bench's own calls): spend per key.
    gateway_key: Mapped[str] = mapped_column(String(64), default="", server_default="")
    # A panel's call whose ask the Ask page's toggle made blind (True) or not (False) against its
    # collection's setting; None: as the collection says (`dashboard/blind.py`, Recent asks).
    blind: Mapped[bool | None] = mapped_column(Boolean, nullable=True, default=None)


class Verdict(Base):
    """One verdict per call; sending the same one again writes nothing, a
    different one replaces it."""

    __tablename__ = "verdicts"
    # Within-ask comparisons pair the verdicts of one ask's seats from this index alone; a
    # collection's record reads its leftmost column. Ranking reads `verdict_tallies` instead.
    # ix_verdicts_alias_at: one model's verdicts by time (its notes on the model's page).
    # ix_verdicts_at: the bench's newest verdicts one by one, for forgetting (bench/recent.py),
    # read newest first and stopped at a fixed number however many the window holds.
    __table_args__ = (
        Index("ix_verdicts_pairs", "collection", "shape", "ask_id", "kind", "alias", "useful"),
        Index("ix_verdicts_alias_at", "alias", "at"),
        Index("ix_verdicts_at", "at"),
    )

    call_id: Mapped[str] = mapped_column(ForeignKey("calls.id", ondelete="CASCADE"), primary_key=True)
    useful: Mapped[bool] = mapped_column(Boolean)
    note: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime]
    # The judged call's own facts, copied when the verdict is written (a call never changes), so
    # ranking reads verdicts without joining the whole call log.
    alias: Mapped[str] = mapped_column(String(128), default="")
    kind: Mapped[str] = mapped_column(String(16), default="")
    collection: Mapped[str] = mapped_column(String(64), default="")
    shape: Mapped[str] = mapped_column(String(32), default="")
    ask_id: Mapped[str] = mapped_column(String(40), default="")


class VerdictTally(Base):
    """How many verdicts each judged model has per kind of call, collection,
    shape and usefulness: kept in each verdict's own transaction
    (`calls/verdicts.py`), so ranking reads a row per group, however many
    verdicts there are, instead of counting them all every time
    (bench/evidence.py)."""

    __tablename__ = "verdict_tallies"

    alias: Mapped[str] = mapped_column(String(128), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    collection: Mapped[str] = mapped_column(String(64), primary_key=True)
    shape: Mapped[str] = mapped_column(String(32), primary_key=True)
    useful: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)


class PairVerdict(Base):
    """Which of two answers to one ask was better (or a tie, or both bad):
    one row per unordered pair of calls and kind of judge. `pair_key` is
    `min(a, b) + "|" + max(a, b)`; for a tie or both bad `better_call` and
    `worse_call` are the two in sorted order. The models behind the calls
    are copied when it is written (a call never changes), so the rating
    reads pairs without joining the call log (`calls/pairs.py`)."""

    __tablename__ = "pair_verdicts"
    __table_args__ = (
        UniqueConstraint("pair_key", "kind"),
        # The rating reads a collection's pairs (bench/pair_reads.py, via `pair_outcomes`).
        Index("ix_pair_verdicts_collection", "collection", "shape"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    ask_id: Mapped[str] = mapped_column(String(40), index=True)
    pair_key: Mapped[str] = mapped_column(String(90))
    better_call: Mapped[str] = mapped_column(ForeignKey("calls.id", ondelete="CASCADE"))
    worse_call: Mapped[str] = mapped_column(ForeignKey("calls.id", ondelete="CASCADE"))
    better_alias: Mapped[str] = mapped_column(String(128))
    worse_alias: Mapped[str] = mapped_column(String(128))
    outcome: Mapped[str] = mapped_column(String(12))  # "better", "tie", "both_bad"
    kind: Mapped[str] = mapped_column(String(8), default="person")  # who judged: "person" or "judge"
    collection: Mapped[str] = mapped_column(String(64), default="")
    shape: Mapped[str] = mapped_column(String(32), default="")
    note: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime]


class KeptText(Base):
    """The text of an ask, kept only for a collection whose `keep_text` is on,
    until `expires_at`: the question (the ask's row: `id` is the ask id) and
    each answer (a call's row: `id` is the call id). The one place prompt or
    answer text of a gateway request is ever stored; the expiry sweep and a
    collection's deletion remove it (`store/kept.py`)."""

    __tablename__ = "kept_texts"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # ask id or call id
    ask_id: Mapped[str] = mapped_column(String(40), index=True)
    collection: Mapped[str] = mapped_column(String(64), index=True)
    # The ask's row: the messages asked ({"system", "messages": [{"role", "content"}]}).
    question: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # A call's row: its answer.
    answer: Mapped[str] = mapped_column(Text, default="")
    expires_at: Mapped[datetime] = mapped_column(index=True)


class UsageMonth(Base):
    """The usage ledger: tokens and requests per endpoint and model per month,
    added to as each call ends (the per-call figures are on `calls`). A
    month of one model may be split over a few rows (`shard`), which a read
    adds up: on PostgreSQL each batch of the call log adds to a row picked
    at random among `call_rows.LEDGER_SHARDS`, so writers in several
    processes seldom wait on one row's lock (`call_rows.postgres_batch`)."""

    __tablename__ = "usage_ledger"
    __table_args__ = (UniqueConstraint("month", "endpoint", "served", "shard"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    month: Mapped[str] = mapped_column(String(7))  # "2026-11"
    endpoint: Mapped[str] = mapped_column(String(64))
    served: Mapped[str] = mapped_column(String(256))
    shard: Mapped[int] = mapped_column(SmallInteger, default=0, server_default="0")
    requests: Mapped[int] = mapped_column(Integer, default=0)
    tokens_in: Mapped[int] = mapped_column(Integer, default=0)
    tokens_out: Mapped[int] = mapped_column(Integer, default=0)
    # USD of the calls whose price was known, and how many calls' price was not.
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    unpriced: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


# ----------------------------------------------------------------- budgets


class Budget(Base):
    """A spending ceiling the user set (`limits/budgets.py`): on a gateway key,
    a collection or the whole install ("" name), per calendar day, week or
    month (UTC), in USD, in tokens, or both (a null is no ceiling in it)."""

    __tablename__ = "budgets"
    __table_args__ = (UniqueConstraint("scope", "name", "period"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    scope: Mapped[str] = mapped_column(String(16))  # "key", "collection", "install"
    name: Mapped[str] = mapped_column(String(64), default="")
    period: Mapped[str] = mapped_column(String(8))  # "day", "week", "month"
    usd: Mapped[float | None] = mapped_column(Float)
    tokens: Mapped[int | None] = mapped_column(BigInteger)


class BudgetSpend(Base):
    """What was spent per scope and UTC day, for budgets: added to as calls
    settle (`limits/budget_spend.py`, batched), read back when a process
    starts counting a period, so a restart does not forget this period's
    spend. USD in nano-dollars (an integer: sums stay exact)."""

    __tablename__ = "budget_spend"
    __table_args__ = (UniqueConstraint("scope", "name", "day"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    scope: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(64), default="")
    day: Mapped[str] = mapped_column(String(10))  # "2026-12-04"
    nano_usd: Mapped[int] = mapped_column(BigInteger, default=0)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)


# ------------------------------------------------------------------ limits


class LimitSetting(Base):
    """A limit the user set, on an endpoint (model empty) or one model."""

    __tablename__ = "limit_settings"
    __table_args__ = (UniqueConstraint("endpoint", "served", "window", "unit"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(64))
    served: Mapped[str] = mapped_column(String(256), default="")
    window: Mapped[str] = mapped_column(String(8))  # "minute", "day", "month"
    unit: Mapped[str] = mapped_column(String(8))  # "requests", "tokens"
    amount: Mapped[int] = mapped_column(Integer)


class LearnedLimit(Base):
    """What a provider last said about a limit (headers or a 429 body)."""

    __tablename__ = "learned_limits"
    __table_args__ = (UniqueConstraint("endpoint", "served", "unit", "window"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(64))
    # The model it counts for when the endpoint's limits are per model; "" when per key.
    served: Mapped[str] = mapped_column(String(256), default="")
    unit: Mapped[str] = mapped_column(String(8))  # "requests", "tokens"
    window: Mapped[str] = mapped_column(String(8))  # "minute", "day", "" when unknown
    limit: Mapped[int | None] = mapped_column(Integer)
    remaining: Mapped[int | None] = mapped_column(Integer)
    resets_at: Mapped[datetime | None]
    source: Mapped[str] = mapped_column(String(32), default="")  # which header style or "429 body"
    seen_at: Mapped[datetime]


# -------------------------------------------------------------- the guard


class GatewayKey(Base):
    """A gateway key: only its hash is kept; the key is shown once."""

    __tablename__ = "gateway_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    key_hash: Mapped[str] = mapped_column(String(128), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))  # first characters, to recognise it in a list
    collections: Mapped[list[Any]]  # names it may call; empty = all
    requests_per_minute: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime]
    # When it stops working: set by `key revoke` (now), or by `key rotate`
    # on the replaced secret's row (now + the grace period).
    revoked_at: Mapped[datetime | None]
    expires_at: Mapped[datetime | None]  # the expiry the owner set; None: never
    rotated_at: Mapped[datetime | None]  # set on a secret replaced by `key rotate`


class DashboardSession(Base):
    """A dashboard login: the cookie carries a random token, the store only
    its hash, so logout, a password change or "sign out everywhere" (deleting
    the rows) ends it at once, on every worker and replica."""

    __tablename__ = "dashboard_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime] = mapped_column(index=True)


class Setting(Base):
    """Settings the dashboard and CLI change (scheduler on, allowed hosts, login)."""

    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)


# ------------------------------------------------------- bench operations


class OnboardingItem(Base):
    """The onboarding queue: one model at a time; survives a restart."""

    __tablename__ = "onboarding_queue"

    id: Mapped[int] = mapped_column(primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(64))
    served: Mapped[str] = mapped_column(String(256))
    alias: Mapped[str] = mapped_column(String(128), default="")
    role: Mapped[str] = mapped_column(String(16), default="")
    mode: Mapped[str] = mapped_column(String(16))  # "full", "quick", "quick_ad_hoc"
    state: Mapped[str] = mapped_column(String(16), default="queued")  # queued, running, done, failed
    # A rate-limited item waits in the queue until its limit frees, then runs again.
    not_before: Mapped[datetime | None]
    step: Mapped[str] = mapped_column(String(64), default="")
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class Probe(Base):
    """One health or speed probe of a model, kept as evidence."""

    __tablename__ = "probes"

    id: Mapped[int] = mapped_column(primary_key=True)
    alias: Mapped[str] = mapped_column(String(128), index=True)
    call_id: Mapped[str] = mapped_column(String(40), default="")
    kind: Mapped[str] = mapped_column(String(16))  # "onboard", "daily", "speed", "confirm"
    name: Mapped[str] = mapped_column(
        String(32)
    )  # which prompt: "word", "sum", "json", "format", "short", "long"
    at: Mapped[datetime]
    # Health is `answered` (a reply came back); `ok` is answered AND the reply passed
    # the probe's check, a quality signal only: a wrong sum is no outage.
    answered: Mapped[bool] = mapped_column(Boolean, default=True)
    # Rate limited (a 429, or our limiter would not let it go now): the model rests,
    # which says nothing of whether it answers, so health and retirement ignore it.
    limited: Mapped[bool] = mapped_column(Boolean, default=False)
    ok: Mapped[bool] = mapped_column(Boolean)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    first_byte_seconds: Mapped[float | None] = mapped_column(Float)
    tokens_per_second: Mapped[float | None] = mapped_column(Float)
    answer: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str] = mapped_column(Text, default="")


class SuiteResult(Base):
    """One model's result on one suite task in one run."""

    __tablename__ = "suite_results"
    __table_args__ = (Index("ix_suite_alias_task", "alias", "task"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[str] = mapped_column(String(40), index=True)
    alias: Mapped[str] = mapped_column(String(128))
    task: Mapped[str] = mapped_column(String(128))
    shape: Mapped[str] = mapped_column(String(32), default="")
    call_id: Mapped[str] = mapped_column(String(40), default="")
    at: Mapped[datetime]
    passed: Mapped[bool] = mapped_column(Boolean)
    # Wrong while claiming certainty.
    confidently_wrong: Mapped[bool] = mapped_column(Boolean, default=False)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    answer: Mapped[str] = mapped_column(Text, default="")
    detail: Mapped[str] = mapped_column(Text, default="")


class CatalogEntry(Base):
    """Catalog facts per provider model (models.dev snapshot or refresh)."""

    __tablename__ = "catalog"
    __table_args__ = (UniqueConstraint("provider", "model"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(256))
    facts: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime]


class Alert(Base):
    """Something the user should see: a free model went paid, a model retired."""

    __tablename__ = "alerts"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    subject: Mapped[str] = mapped_column(String(256))
    message: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime]
    dismissed: Mapped[bool] = mapped_column(Boolean, default=False)


class JobRun(Base):
    """When each scheduled job last ran, so a missed run is made up once."""

    __tablename__ = "job_runs"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    last_run_at: Mapped[datetime]
    last_status: Mapped[str] = mapped_column(String(16), default="ok")
    detail: Mapped[str] = mapped_column(Text, default="")


# --------------------------------------------------------------- route mode


class Conversation(Base):
    """Route-mode stickiness: a conversation key and the member answering it."""

    __tablename__ = "conversations"

    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    collection: Mapped[str] = mapped_column(String(64))
    alias: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime]
    # When the member last changed (a new conversation, or a failover).
    updated_at: Mapped[datetime]
