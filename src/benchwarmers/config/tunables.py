"""Every tunable default, with its reason: the time-outs, intervals and
bounds the code runs by, in one place (`benchwarmers.config.tunables`;
front ends through `benchwarmers.core`). The module that uses one keeps
its own name for it (`LINGER = tunables.CALL_LOG_LINGER.value`), so tests
and readers find it there, and it is set here or nowhere
(tests/config/test_tunables.py finds every one in its module).

What the environment sets is `environment.py`; what the owner sets at run
time is the settings table (`store/settings.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V", int, float, tuple[float, ...])


@dataclass(frozen=True, slots=True)
class Tunable(Generic[V]):
    """One default: its value, its unit, the constant that holds it
    (`module.NAME`, under `benchwarmers`) and why it is what it is."""

    value: V
    unit: str
    where: str
    reason: str


CALL_LOG_LINGER = Tunable(
    0.05,
    "s",
    "calls.log.LINGER",
    (
        "Seconds a journaled call waits for others to share its commit: a reply does not wait for it, and "
        "a reader in this process that does (`settled`, `landing`) cuts it short. With the writer "
        "lingering between batches too (`_drain`), at ten connections on a one-seat panel, 50 ms took the "
        "writer's thread from 0.06-0.09 to 0.02-0.06 ms of CPU a call and the server's CPU a request down "
        '13%, where 10 ms took it down 5% (docs/benchmarks.md, "The call log\'s batches"). What it holds '
        "back is bounded by `MAX_BEHIND`, and a crash loses none of it (the journal)."
    ),
)
CALL_LOG_MAX_BEHIND = Tunable(
    1000,
    "calls",
    "calls.log.MAX_BEHIND",
    (
        "Journaled calls not yet committed past which a reply waits for its call's commit, as it does "
        "without a journal. Under a load the writer cannot keep up with, nothing else would slow the "
        "replies down, and the calls waiting for it would pile up in memory without end (51,000 requests "
        "at ten connections: RSS +57-80%; docs/benchmarks.md)."
    ),
)
CALL_LOG_ARRIVING = Tunable(
    5.0,
    "s",
    "calls.log.ARRIVING",
    (
        "Seconds a call minted in another process may take to reach the log, for whoever names it "
        "(`settled`): that process's `LINGER`, its commit, and room for a database slow for a moment and "
        "clocks a little apart. A young id the log never gets (a typo, a refused row) costs its reader "
        "this long, at most."
    ),
)
CALL_LOG_FIRST_LOOK = Tunable(
    0.005,
    "s",
    "calls.log.FIRST_LOOK",
    (
        "Seconds between a reader's first looks for a call on its way from elsewhere, doubling to the "
        "last: most arrive within a `LINGER`."
    ),
)
CALL_LOG_LAST_LOOK = Tunable(
    0.1,
    "s",
    "calls.log.LAST_LOOK",
    "The longest pause between those looks: a call on its way is seen within this of arriving.",
)
CALL_LOG_ACROSS_LOOPS = Tunable(
    5.0,
    "s",
    "calls.log.ACROSS_LOOPS",
    "Seconds a read on another event loop waits for this writer's loop to commit (`_across`).",
)
CALL_LOG_CHECKPOINT_EVERY = Tunable(
    100,
    "batches",
    "calls.log.CHECKPOINT_EVERY",
    (
        "Batches between two checkpoints of the WAL beside the writer (`store/wal.py`): a one-call batch "
        "writes some eight pages (its row, its primary key and four indexes, its ledger line and that "
        "line's index), so this is about SQLite's own auto-checkpoint of 1,000 pages. (A batch under the "
        "journal's `LINGER` holds several calls, and the WAL grows slower for it.)"
    ),
)
CALL_LOG_WRITER_CHECKPOINT_EVERY = Tunable(
    1000,
    "batches",
    "calls.log.WRITER_CHECKPOINT_EVERY",
    (
        "Batches between two checkpoints by the writer itself, which the next batch waits for: under a "
        "load that never pauses, the WAL starts over only after one of these."
    ),
)
CALL_LOG_CLOSE_TIMEOUT = Tunable(
    5.0,
    "s",
    "calls.log.CLOSE_TIMEOUT",
    "Seconds a closing store waits for PostgreSQL to end the log's connection politely.",
)
CALL_LOG_RECONNECT_AFTER = Tunable(
    (0.2, 1.0, 4.0),
    "s",
    "calls.log.RECONNECT_AFTER",
    (
        "Seconds between tries of a batch while PostgreSQL is out of reach: about a restart's time in "
        "all, while replies go on (the journal) and the batches behind this one wait."
    ),
)
HEAD_SECONDS = Tunable(
    10.0,
    "s",
    "server.protocol.HEAD_SECONDS",
    (
        "A request head (line and headers) not all in within this of the connection opening or of the "
        "previous response: slowloris on the head, the connection closed (`server/protocol.py`)."
    ),
)
BODY_IDLE_SECONDS = Tunable(
    10.0,
    "s",
    "server.guard.BODY_IDLE_SECONDS",
    "No byte of the body for this long: the client stalled.",
)
BODY_SECONDS = Tunable(
    120.0,
    "s",
    "server.guard.BODY_SECONDS",
    "The whole body, however it trickles.",
)
PANEL_STREAM_BUFFER = Tunable(
    64 * 1024,
    "characters",
    "panel.hand.STREAM_BUFFER",
    (
        "Seat text a panel's stream holds for its client before a seat waits (and so stops reading its "
        "upstream): backpressure, so a client that reads nothing holds this, not its reply (100 stalled "
        "readers of a 4 MB answer held +417 MB before; docs/benchmarks.md, issue 36). Far above what a "
        "reader keeping up ever leaves unread (a model writes a few hundred characters a second)."
    ),
)
SEND_BUFFER = Tunable(
    128 * 1024,
    "bytes",
    "server.protocol.SEND_BUFFER",
    (
        "The kernel's send buffer for each client connection (`SO_SNDBUF`; Linux doubles it), fixed "
        "rather than grown up to `tcp_wmem`'s 4 MB: a client that reads nothing can take no more than "
        "this off a stream, and what a stream has sent is what its seat keeps of its text, so a stalled "
        "reader of a 4 MB answer made the server keep all of it (docs/benchmarks.md, issue 36); 256 KB "
        "left ~0.8 MB of text a stalled stream, 128 KB ~0.4 MB. A model's stream runs at kilobytes a "
        "second, far under 128 KB a round trip."
    ),
)
DRAIN_SECONDS = Tunable(
    2.0,
    "s",
    "server.guard.DRAIN_SECONDS",
    (
        "At most this long spent reading and dropping a body refused as too large, so the client reads "
        "our 413 rather than a reset connection (`guard._drain`)."
    ),
)
UNWIND_SECONDS = Tunable(
    5.0,
    "s",
    "server.app.UNWIND_SECONDS",
    "How long a shutdown waits for the requests uvicorn cancelled to unwind.",
)
GRACEFUL_SHUTDOWN_SECONDS = Tunable(
    10,
    "s",
    "server.run.GRACEFUL_SHUTDOWN_SECONDS",
    (
        "uvicorn's graceful shutdown: requests still running this long after a stop are cancelled (they "
        "unwind, `app.cancelled_requests_unwound`)."
    ),
)
WORKER_HEALTHCHECK_SECONDS = Tunable(
    30,
    "s",
    "server.run.WORKER_HEALTHCHECK_SECONDS",
    (
        "How long `serve --workers N`'s supervisor waits for a worker to answer its ping before it kills "
        "and replaces it (uvicorn's default is 5). A spawned worker answers only once its interpreter is "
        "up, and on a loaded two-core box that took over 5 s: at 5 the supervisor killed fourteen new "
        "workers in a row before two answered. A worker that dies is replaced at once whatever this is."
    ),
)
UNKNOWN_RETRY_SECONDS = Tunable(
    60,
    "s",
    "server.errors.UNKNOWN_RETRY_SECONDS",
    "Retry-After for a refusal whose end nobody knows: a minute, the window most providers count in.",
)
KEEPALIVE_SECONDS = Tunable(
    30.0,
    "s",
    "providers.outbound.KEEPALIVE_SECONDS",
    (
        "An idle pooled connection to a provider is closed after this: shorter than most servers keep one "
        "(so we close first), long enough to serve the next call of a busy bench."
    ),
)
LIST_SECONDS = Tunable(
    30.0,
    "s",
    "providers.kinds.LIST_SECONDS",
    "Waiting on an endpoint's model list: a listing is one small GET.",
)
ROUTE_TURN_SECONDS = Tunable(
    600.0,
    "s",
    "route.engine.ROUTE_TURN_SECONDS",
    (
        "A turn's whole budget: agents write long replies (a file, a patch), so a turn may run well past "
        "the time a member has to start answering (the collection's seat timeout, which is what failover "
        "waits for)."
    ),
)
CONNECT_TIMEOUT = Tunable(
    3.0,
    "s",
    "api_client.CONNECT_TIMEOUT",
    "Connecting to a server that is not there fails at once (then the CLI runs in-process).",
)
FOLLOW_SECONDS = Tunable(
    0.5,
    "s",
    "core.operations.FOLLOW_SECONDS",
    "How often a CLI onboarding that a server runs is read back from the store.",
)
FINISH_GRACE_SECONDS = Tunable(
    10.0,
    "s",
    "core.panels.FINISH_GRACE_SECONDS",
    (
        "How long a closing process lets running panels finish before cancelling them (a cancelled seat "
        "is still recorded, as stopped)."
    ),
)
DOCTOR_TIMEOUT = Tunable(
    5.0,
    "s",
    "core.diagnostics.TIMEOUT",
    (
        "Each of `benchwarmers doctor`'s checks (an endpoint listed, Redis) answers within this or is "
        "reported as not answering."
    ),
)
DOCTOR_SERVER_TIMEOUT = Tunable(
    5.0,
    "s",
    "cli.doctor.SERVER_TIMEOUT",
    "`doctor` waits this long for a running server to answer before saying none does.",
)
PROBE_TIMEOUT = Tunable(
    60.0,
    "s",
    "bench.probes.PROBE_TIMEOUT",
    "A probe is a short question: a model that has not answered it in a minute is not answering.",
)
SPEED_TIMEOUT = Tunable(
    180.0,
    "s",
    "bench.probes.SPEED_TIMEOUT",
    "The speed probe asks for a long reply, so it gets three minutes.",
)
ONBOARDING_POLL_SECONDS = Tunable(
    2.0,
    "s",
    "bench.onboarding.POLL_SECONDS",
    "How often an idle server worker looks for items another process queued.",
)
SUITE_TASK_TIMEOUT = Tunable(
    180.0,
    "s",
    "bench.suite.runner.TASK_TIMEOUT",
    "A suite task asks for code or a long answer: three minutes per call.",
)
REBENCH_VALIDATE_TIMEOUT = Tunable(
    60.0,
    "s",
    "bench.suite.rebench.VALIDATE_TIMEOUT",
    (
        "Running a SWE-rebench task's own tests on its gold patch, to keep only tasks that pass, within a "
        "minute."
    ),
)
REBENCH_PAGE_TIMEOUT = Tunable(
    60.0,
    "s",
    "bench.suite.rebench_fetch.PAGE_TIMEOUT",
    "A page of patches is a few MB at most.",
)
SCHEDULER_WATCH_SECONDS = Tunable(
    60,
    "s",
    "bench.scheduler.WATCH_SECONDS",
    ("How often the scheduler looks whether a job is due (jobs are hours apart; a minute late is nothing)."),
)
CACHE_REFRESH_AFTER = Tunable(
    0.005,
    "s",
    "store.changes.REFRESH_AFTER",
    (
        "Seconds a refresh waits before it reads: the ask that found the entry late goes first. Its "
        "read's first step (building the session and the statement, 1-4 ms of CPU) would otherwise run "
        "before the work that ask set going next, a panel's seats among it: the slowest seat went out "
        "2-12 ms late on about every other ask of `benchmarks/panel.py`."
    ),
)
RESUBSCRIBE_SECONDS = Tunable(
    1.0,
    "s",
    "store.conversations.RESUBSCRIBE_SECONDS",
    "How long to wait before subscribing again after Redis went away.",
)
KEY_MISS_RELOAD_SECONDS = Tunable(
    0.5,
    "s",
    "identity.keys.MISS_RELOAD_AFTER",
    (
        "An unknown `bw-` secret reloads the key table at most this often: a key made or rotated by "
        "another worker or replica works here at once, while made-up keys cost at most two reads a "
        "second, not one per request."
    ),
)
PANEL_RETRY_SECONDS = Tunable(
    5,
    "s",
    "limits.panels.RETRY_SECONDS",
    "A panel's seats usually finish within seconds: a fair time to try again.",
)
DEFAULT_REST = Tunable(
    60.0,
    "s",
    "limits.enforce.DEFAULT_REST",
    "How long a 429 that says nothing about when to come back rests a model.",
)
LIMITS_KEEP_EVERY = Tunable(
    1.0,
    "s",
    "limits.enforce.KEEP_EVERY",
    "At most how often the limits every reply's headers repeat are written to the store.",
)
BUDGET_FLUSH_SECONDS = Tunable(
    1.0,
    "s",
    "limits.budget_spend.FLUSH_EVERY",
    (
        "At most how long what calls spent waits in memory before it is written to `budget_spend`, the "
        "copy a restarted server starts a budget's period from: one write a second whatever the load, "
        "and at most a second of sums lost to a crash (the calls themselves are in the call log)."
    ),
)
SESSION_SECONDS = Tunable(
    12 * 3600,
    "s",
    "dashboard.auth.SESSION_SECONDS",
    "A dashboard session lasts a working day; the password (or its change) starts another.",
)
LOCAL_PROBE_TIMEOUT = Tunable(
    1.5,
    "s",
    "core.admin.LOCAL_PROBE_TIMEOUT",
    "A local server answers at once or is not there.",
)
SIGNIN_SECONDS = Tunable(
    600,
    "s",
    "dashboard.signin.SIGNIN_SECONDS",
    "A provider sign-in not finished within ten minutes starts over.",
)
SIGNIN_EXCHANGE_TIMEOUT = Tunable(
    20.0,
    "s",
    "core.admin.SIGNIN_EXCHANGE_TIMEOUT",
    "The provider's token endpoint answers within this, or the sign-in says so.",
)
MIN_PROGRESS_SECONDS = Tunable(
    0.05,
    "s",
    "mcp.server.MIN_PROGRESS_SECONDS",
    "The shortest interval of MCP progress notifications one may set: more often is noise.",
)

JUDGE_MAX_TOKENS = Tunable(
    1024,
    "tokens",
    "panel.judge.JUDGE_MAX_TOKENS",
    (
        "What a judge model may write: one short JSON object, an entry per pair of seats (an eight-seat "
        "panel is 28 entries of some 20 tokens); a judge that writes prose first is not paid for at length."
    ),
)
SHAPE_READ_CHARACTERS = Tunable(
    4 * 1024 * 1024,
    "characters",
    "panel.shapes.READ_CHARACTERS",
    (
        "How much of the messages read for a request's shape is kept, with what was read (a fence, its "
        "code lines, words about code), for the next asks that resend them: an agent resends its whole "
        "conversation every turn, and reading it all again cost more than the rest of a route turn "
        "from some 2 KB on (77 KB: 62M instructions a turn as three regexes, 0.25M with its messages' "
        "readings kept). Four million characters keep a round of some forty agents' 100 KB "
        "conversations; a message is kept only from 256 characters on, below which reading it costs "
        "about what finding it does."
    ),
)
TUNABLES: tuple[Tunable[int] | Tunable[float] | Tunable[tuple[float, ...]], ...] = (
    CALL_LOG_LINGER,
    CALL_LOG_MAX_BEHIND,
    CALL_LOG_ARRIVING,
    CALL_LOG_FIRST_LOOK,
    CALL_LOG_LAST_LOOK,
    CALL_LOG_ACROSS_LOOPS,
    CALL_LOG_CHECKPOINT_EVERY,
    CALL_LOG_WRITER_CHECKPOINT_EVERY,
    CALL_LOG_CLOSE_TIMEOUT,
    CALL_LOG_RECONNECT_AFTER,
    HEAD_SECONDS,
    BODY_IDLE_SECONDS,
    BODY_SECONDS,
    PANEL_STREAM_BUFFER,
    SEND_BUFFER,
    DRAIN_SECONDS,
    UNWIND_SECONDS,
    GRACEFUL_SHUTDOWN_SECONDS,
    WORKER_HEALTHCHECK_SECONDS,
    UNKNOWN_RETRY_SECONDS,
    KEEPALIVE_SECONDS,
    LIST_SECONDS,
    ROUTE_TURN_SECONDS,
    CONNECT_TIMEOUT,
    FOLLOW_SECONDS,
    FINISH_GRACE_SECONDS,
    DOCTOR_TIMEOUT,
    DOCTOR_SERVER_TIMEOUT,
    PROBE_TIMEOUT,
    SPEED_TIMEOUT,
    ONBOARDING_POLL_SECONDS,
    SUITE_TASK_TIMEOUT,
    REBENCH_VALIDATE_TIMEOUT,
    REBENCH_PAGE_TIMEOUT,
    SCHEDULER_WATCH_SECONDS,
    CACHE_REFRESH_AFTER,
    RESUBSCRIBE_SECONDS,
    KEY_MISS_RELOAD_SECONDS,
    PANEL_RETRY_SECONDS,
    DEFAULT_REST,
    LIMITS_KEEP_EVERY,
    BUDGET_FLUSH_SECONDS,
    SESSION_SECONDS,
    LOCAL_PROBE_TIMEOUT,
    SIGNIN_SECONDS,
    SIGNIN_EXCHANGE_TIMEOUT,
    MIN_PROGRESS_SECONDS,
    JUDGE_MAX_TOKENS,
    SHAPE_READ_CHARACTERS,
)
