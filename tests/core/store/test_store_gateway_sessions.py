"""The `GatewaySessions` contract: where each bot's gateway session stands outlives the process
that wrote it, and the same session's `seq` never goes back."""

from __future__ import annotations

from store_backends import Backend

from core.store import GatewaySession, Store

URL = "wss://gateway.example/resume"


def session(seq: int, session_id: str = "s-1", shard: int = -1) -> GatewaySession:
    return GatewaySession("lead", shard, session_id, URL, seq, f"2024-05-14T09:00:{seq:02d}Z")


def test_a_session_survives_a_reopen_and_its_seq_never_goes_back(backend: Backend) -> None:
    async def first_run(store: Store) -> None:
        async with store.transaction():
            await store.save_gateway_session("discord", session(7))
        await store.save_gateway_session("discord", session(5))  # a replayed, older frame
        await store.save_gateway_session("discord", session(3, shard=1))

    async def second_run(store: Store) -> None:
        assert await store.gateway_sessions("discord", "lead") == [
            session(7),
            session(3, shard=1),
        ]
        # A new session replaces the old one, whatever its seq.
        await store.save_gateway_session("discord", session(2, session_id="s-2"))
        [unsharded, _] = await store.gateway_sessions("discord", "lead")
        assert (unsharded.session_id, unsharded.seq) == ("s-2", 2)
        assert await store.gateway_sessions("discord", "worker-1") == []
        assert await store.gateway_sessions("slack", "lead") == []

    backend.run(first_run)
    backend.run(second_run)  # the tables are created idempotently
