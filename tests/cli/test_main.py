"""The admin CLI in-process: commands work, and every error is one line on
stderr with a non-zero exit."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from benchwarmers.cli.main import app
from benchwarmers.config.home import POINTER_FILE


def bench(*args: str, input: str | None = None, cwd: Path | None = None) -> Result:
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(app, list(args), input=input)
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        return runner.invoke(app, list(args), input=input)
    finally:
        os.chdir(previous)


def ok(*args: str, input: str | None = None) -> str:
    result = bench(*args, input=input)
    assert result.exit_code == 0, result.output
    return result.stdout


def fails(*args: str, contains: str) -> None:
    result = bench(*args)
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert contains in lines[0]
    assert "Traceback" not in result.output


@pytest.fixture
def hub() -> None:
    ok("endpoint", "add", "hub", "http://127.0.0.1:9/v1")
    ok("model", "add", "alpha", "--endpoint", "hub", "--served", "vendor/alpha")


def test_init_with_dir_writes_the_pointer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHWARMERS_HOME")
    work = tmp_path / "checkout"
    work.mkdir()
    result = bench("init", "bench-data", cwd=work)
    assert result.exit_code == 0, result.output
    assert (work / POINTER_FILE).read_text().strip() == str(work / "bench-data")
    assert (work / "bench-data" / "benchwarmers.db").is_file()
    listed = bench("endpoint", "list", cwd=work)  # later commands in that directory use the pointed folder
    assert listed.exit_code == 0 and "No endpoints yet" in listed.stdout


def test_init_endpoint_and_key(tmp_path: Path) -> None:
    out = ok(
        "init",
        "--endpoint",
        "my-hub",
        "https://hub.example/v1",
        "--api",
        "anthropic",
        "--key",
        input="sk-x\n",
    )
    assert "Added endpoint my-hub" in out
    keys_file = tmp_path / "llm" / "keys.json"
    assert json.loads(keys_file.read_text())["my-hub"] == "sk-x"
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    listed = ok("endpoint", "list")
    assert "my-hub" in listed and "anthropic" in listed and "keys.json" in listed
    # Running init again is harmless; a different URL for the same name is refused.
    ok("init", "--endpoint", "my-hub", "https://hub.example/v1", "--api", "anthropic")
    fails("init", "--endpoint", "my-hub", "https://other.example/v1", contains="already exists")


def test_endpoint_add_reads_a_piped_key(tmp_path: Path) -> None:
    ok("endpoint", "add", "hub", "http://127.0.0.1:9/v1", "--key", "--no-check", input="sk-piped\n")
    assert json.loads((tmp_path / "llm" / "keys.json").read_text())["hub"] == "sk-piped"
    result = bench("endpoint", "add", "other", "http://127.0.0.1:9/v1", "--key", input="\n")
    assert result.exit_code == 1 and result.stderr.strip() == "error: no key given"


def test_endpoint_list_names_the_key_source(monkeypatch: pytest.MonkeyPatch) -> None:
    ok("endpoint", "add", "hub", "http://127.0.0.1:9/v1")
    assert "missing" in ok("endpoint", "list")
    monkeypatch.setenv("BENCHWARMERS_KEY_HUB", "sk-env")
    assert "BENCHWARMERS_KEY_HUB" in ok("endpoint", "list")


def test_models_and_collections(hub: None) -> None:
    ok("model", "add", "beta", "-e", "hub", "-s", "vendor/beta", "--role", "code")
    fails("model", "add", "beta/../alpha", "-e", "hub", "-s", "vendor/x", contains="not empty, . or ..")
    ok(
        "collection",
        "add",
        "duo",
        "--member",
        "alpha",
        "--member",
        "beta",
        "--reply",
        "merged",
        "--purpose",
        "checks",
    )
    shown = ok("collection", "show", "duo")
    assert "alpha, beta" in shown and "merged" in shown and "checks" in shown
    assert "bench/duo" in ok("collection", "list")
    ok("model", "retire", "alpha", "--reason", "went quiet")
    listed = ok("model", "list")
    assert "retired" in listed and "went quiet" in listed
    ok("model", "restore", "alpha")
    ok("model", "role", "alpha", "light")
    assert "light" in ok("model", "list")
    ok("collection", "set", "duo", "--member", "beta", "--seats", "1")
    assert "alpha" not in ok("collection", "show", "duo").split("members", 1)[1].splitlines()[0]
    assert re.search(r"judge verdicts\s+off", ok("collection", "show", "duo"))
    assert re.search(r"judge verdicts\s+on", ok("collection", "set", "duo", "--judge-verdicts"))
    assert re.search(r"judge verdicts\s+off", ok("collection", "set", "duo", "--no-judge-verdicts"))
    assert re.search(
        r"keep text\s+1 day\b", ok("collection", "set", "duo", "--keep-text", "--keep-days", "1")
    )
    assert re.search(r"blind\s+no", ok("collection", "show", "duo"))
    assert re.search(r"blind\s+yes", ok("collection", "set", "duo", "--blind"))
    assert re.search(r"blind\s+no", ok("collection", "set", "duo", "--no-blind"))
    assert re.search(r"blind\s+yes", ok("collection", "add", "hidden", "--member", "beta", "--blind"))


def test_structured_output_settings(hub: None) -> None:
    """`model json` says what a model can; `--output-fallback` what a collection does when it cannot."""
    assert "json unknown" in ok("model", "show", "alpha")
    assert "structured output: no" in ok("model", "json", "alpha", "no")
    assert "json no" in ok("model", "show", "alpha")
    ok("collection", "add", "js", "--member", "alpha", "--output-fallback", "prompt")
    assert "prompt" in ok("collection", "show", "js").split("output fallback", 1)[1].splitlines()[0]
    ok("collection", "set", "js", "--output-fallback", "leave_off")
    assert "leave_off" in ok("collection", "show", "js")
    fails("collection", "set", "js", "--output-fallback", "guess", contains="output fallback 'guess'")
    fails("model", "json", "alpha", "maybe", contains="yes, no or unknown")


def test_one_line_errors(hub: None) -> None:
    fails(
        "model",
        "add",
        "gamma",
        "--endpoint",
        "nowhere",
        "--served",
        "x",
        contains="no endpoint named 'nowhere'",
    )
    fails(
        "model", "add", "alpha", "--endpoint", "hub", "--served", "other", contains="alias 'alpha' is already"
    )
    fails("endpoint", "add", "other", "not a url", contains="base URL 'not a url' is not valid")
    fails("endpoint", "add", "other", "https://x.example", "--api", "cohere", contains="API kind")
    fails("endpoint", "remove", "hub", contains="still serves 1 model(s) (alpha)")
    fails("model", "role", "alpha", "boss", contains="role 'boss'")
    fails("collection", "show", "nothing", contains="no collection named 'nothing'")
    fails("collection", "add", "duo", "--member", "ghost", contains="'ghost'")
    fails("model", "add", contains="Missing argument")
    fails("nonsense", contains="No such command")
    fails("init", "--key", contains="--key needs --endpoint")


def test_unusable_data_folder_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("BENCHWARMERS_HOME", str(tmp_path / "a-file"))
    fails("model", "list", contains="is a file, not a folder")
    monkeypatch.setenv("BENCHWARMERS_HOME", str(tmp_path / "a-file" / "below"))
    fails("endpoint", "list", contains="cannot create the data folder")
    monkeypatch.delenv("BENCHWARMERS_HOME")
    (tmp_path / POINTER_FILE).mkdir()
    result = bench("model", "list", cwd=tmp_path)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1 and "cannot read" in result.stderr


def test_broken_store_is_one_line(home: Path) -> None:
    (home / "benchwarmers.db").write_bytes(b"this is not a database" * 100)
    fails("model", "list", contains="store")


def test_endpoint_limit_scope_is_set_and_shown() -> None:
    ok("endpoint", "add", "groq", "https://api.groq.com/openai/v1")
    ok("endpoint", "add", "hub", "http://127.0.0.1:9/v1", "--limit-scope", "model")
    assert "groq per model, hub per model (set)" in ok("endpoint", "list")
    assert "limits per key" in ok("endpoint", "scope", "hub", "key")
    assert "hub per key (set)" in ok("endpoint", "list")
    result = bench("endpoint", "scope", "hub", "team")
    assert result.exit_code != 0 and "unknown limit scope 'team'" in result.stderr


def test_words_in_a_models_status_reach_the_terminal_as_marks(hub: None) -> None:
    """A status's reason (an upstream's words when a model is failing, or a
    retirement's) may hold escape sequences; `model list` and `model show`
    print each control character as a mark, never raw (`ESC[2J` cleared the
    reader's screen, `ESC]52` wrote their clipboard)."""
    ok("model", "retire", "alpha", "--reason", "said \x1b]52;c;cm0=\x07 then \x1b[2J")
    listed, shown = ok("model", "list"), ok("model", "show", "alpha")
    assert not {"\x1b", "\x07"} & set(listed + shown)
    assert "⟨U+001B⟩" in listed  # the table wraps the rest of its note
    assert "said ⟨U+001B⟩]52;c;cm0=⟨U+0007⟩ then ⟨U+001B⟩[2J" in shown
