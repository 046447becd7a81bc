from pathlib import Path

from harness_bridge.schema import write_json_schemas

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "schema"


def test_committed_json_schemas_match_the_wire_model(tmp_path: Path) -> None:
    written = write_json_schemas(tmp_path)

    for path in written:
        committed = COMMITTED / path.name
        assert committed.is_file(), f"{committed} is missing: regenerate docs/schema"
        assert committed.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            f"{committed} is stale: regenerate with harness_bridge.schema.write_json_schemas"
        )
    assert sorted(p.name for p in COMMITTED.glob("*.schema.json")) == sorted(
        p.name for p in written
    )
