from core.decision import Disposition
from core.signals import (
    DEFAULT_GLYPHS,
    SIGNAL_DISPOSITION,
    STATUS_SIGNALS,
    Signal,
    superseded_by,
    taken_off,
)


def test_every_signal_has_the_disposition_of_spec_000() -> None:
    assert dict(SIGNAL_DISPOSITION) == {
        Signal.SEEN: Disposition.ACKNOWLEDGED,
        Signal.AGREE: Disposition.ACKNOWLEDGED,
        Signal.WORKING: Disposition.CLAIMED,
        Signal.QUEUED: Disposition.DEFERRED,
        Signal.CLAIMED: Disposition.CLAIMED,
        Signal.DONE: Disposition.RESPONDED,
        Signal.DECLINED: Disposition.IGNORED,
        Signal.BLOCKED: Disposition.DEFERRED,
        Signal.UNCLEAR: None,
    }


def test_status_signals_are_the_five_that_get_replaced() -> None:
    assert {
        Signal.WORKING,
        Signal.QUEUED,
        Signal.CLAIMED,
        Signal.BLOCKED,
        Signal.SEEN,
    } == STATUS_SIGNALS


def test_done_removes_every_status() -> None:
    assert superseded_by(Signal.DONE) == STATUS_SIGNALS


def test_declined_removes_every_status() -> None:
    assert superseded_by(Signal.DECLINED) == STATUS_SIGNALS


def test_working_replaces_the_other_statuses_but_not_itself() -> None:
    assert superseded_by(Signal.WORKING) == {
        Signal.SEEN,
        Signal.QUEUED,
        Signal.CLAIMED,
        Signal.BLOCKED,
    }


def test_blocked_replaces_working() -> None:
    assert Signal.WORKING in superseded_by(Signal.BLOCKED)


def test_seen_never_retracts_a_commitment_and_replaces_only_blocked() -> None:
    assert superseded_by(Signal.SEEN) == {Signal.BLOCKED}


def test_agree_and_unclear_replace_only_seen() -> None:
    assert superseded_by(Signal.AGREE) == {Signal.SEEN}
    assert superseded_by(Signal.UNCLEAR) == {Signal.SEEN}


def test_a_signal_never_supersedes_itself_and_only_statuses() -> None:
    for signal in Signal:
        assert signal not in superseded_by(signal)
        assert superseded_by(signal) <= STATUS_SIGNALS


def test_default_glyphs_are_the_spec_glyphs() -> None:
    assert "".join(DEFAULT_GLYPHS[s] for s in Signal) == "👀👍🔧🕐✋✅🙅🚧❓"


def test_what_a_status_takes_off_is_what_it_supersedes_of_what_is_known_placed() -> None:
    assert taken_off(Signal.QUEUED, frozenset()) == frozenset()  # the first on its message
    assert taken_off(Signal.DONE, frozenset({Signal.WORKING})) == {Signal.WORKING}
    assert taken_off(Signal.SEEN, frozenset({Signal.WORKING})) == frozenset()
    assert taken_off(Signal.DONE, None) is None  # not known: the sender looks
