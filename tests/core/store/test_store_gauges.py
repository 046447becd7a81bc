"""What `/metrics` and `/healthz` read from the ledger (`c2a.metrics.CountedStore`), on every
backend alike: the queue depths (deliveries pending, outbox due), the delivery lag (the age of
the oldest pending delivery), and whether the database answers, with its kind."""

from __future__ import annotations

from datetime import timedelta

from store_backends import Backend

from c2a.metrics import CountedStore, Metrics
from core.clock import format_time, parse_time
from core.decision import Decision, Directedness, InjectionMode, Policy
from core.sqlite_store import SQLiteStore
from core.store import Store

NOW = parse_time("2026-01-01T00:10:00Z")
LAG = {"lead": 90.0, "worker": 0.0}


def decision(event_id: str, agent: str) -> Decision:
    return Decision(
        event_id=event_id,
        agent=agent,
        directedness=Directedness.TO_ME,
        policy=Policy.MUST_RESPOND,
        mode=InjectionMode.BUFFERED,
        reason="direct_mention",
    )


async def queued(store: Store) -> None:
    """Two events for the lead, decided 90 and 30 seconds ago, the second acknowledged after
    the first was not; two outbound actions, one sent; nothing for the worker."""
    for n, age in enumerate((90, 30)):
        at = format_time(NOW - timedelta(seconds=age))
        seq = await store.append(f"e{n}", "message", "u", {}, at)
        assert seq is not None
        await store.record_decisions(seq, [decision(f"e{n}", "lead")], at)
        await store.put_outbox(f"k{n}", "lead", {"kind": "send"}, at)
    await store.mark_delivered("e1", "lead", 1)
    await store.outbox_mark("k1", "sent", format_time(NOW))


def test_depths_lag_and_reachability_are_read_alike_on_every_backend(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        counted = CountedStore(store, Metrics(), "acme")
        await queued(store)
        agents = ["lead", "worker"]
        depths = await counted.queue_depths(agents)
        assert {dict(k)["agent"] + ":" + dict(k)["queue"]: v for k, v in depths.items()} == {
            "lead:deliveries": 1.0,
            "lead:outbox": 1.0,
            "worker:deliveries": 0.0,
            "worker:outbox": 0.0,
        }
        lag = await counted.delivery_lag(agents, NOW)
        assert {dict(k)["agent"]: v for k, v in lag.items()} == LAG
        kind = "sqlite" if isinstance(store, SQLiteStore) else "postgresql"
        assert await counted.database() == {"kind": kind, "reachable": True}
        await store.close()  # as if the database went away
        assert await counted.database() == {
            "kind": kind,
            "reachable": False,
            "error": "StoreError",
        }

    backend.run(scenario)


def test_a_scrape_shows_what_the_ledger_holds_and_nothing_once_it_is_gone(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> tuple[str, str]:
        metrics = Metrics()
        CountedStore(store, metrics, "acme").gauges(lambda: ["lead"], lambda: NOW)
        await queued(store)
        await metrics.refresh()
        before = metrics.render()
        await store.close()
        await metrics.refresh()
        return before, metrics.render()

    before, after = backend.run(scenario)
    assert 'c2a_delivery_lag_seconds{agent="lead",workspace="acme"} 90' in before
    assert 'c2a_queue_depth{agent="lead",queue="outbox",workspace="acme"} 1' in before
    assert "# TYPE c2a_delivery_lag_seconds gauge" in after
    assert "c2a_queue_depth{" not in after and "c2a_delivery_lag_seconds{" not in after
