"""The redaction module: each kind of secret is found and labelled, ordinary chat text is left
alone, structures lose their secret-named fields, and a workspace's own secrets go by value."""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import local_workspace
from fuzz.bounds import bounded
from secret_samples import AWS_SECRET, PEM, SECRETS, SHAPES

from core.clock import parse_time
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind
from core.redact import TOKEN_PREFIX, Redactor, SecretShape, is_secret_name, new_token

redactor = Redactor(shapes=SHAPES)


@pytest.mark.parametrize(
    ("kind", "secret"), [(kind, s) for kind, values in SECRETS.items() for s in values]
)
def test_each_token_shape_is_replaced_by_a_label_naming_its_kind(kind: str, secret: str) -> None:
    said = f"here you go: {secret} (keep it safe)"
    assert redactor.text(said) == f"here you go: [redacted:{kind}] (keep it safe)"


def test_a_token_c2a_makes_is_found_by_its_shape_and_a_word_like_it_is_left() -> None:
    made = new_token()
    assert made.startswith(TOKEN_PREFIX) and len(made) == len(TOKEN_PREFIX) + 43
    assert redactor.text(f"my token: {made}!") == "my token: [redacted:c2a-token]!"
    for ordinary in ("c2a_run", "the c2a_tools module", f"x{made}"):
        assert redactor.text(ordinary) == ordinary


@pytest.mark.parametrize(
    "said",
    [
        f"aws_secret_access_key = {AWS_SECRET}",
        f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
        f'"SecretAccessKey": "{AWS_SECRET}"',
        f"secret_key: {AWS_SECRET}",
    ],
)
def test_an_aws_secret_key_after_its_label_is_replaced_and_the_label_kept(said: str) -> None:
    clean = redactor.text(said)
    assert AWS_SECRET not in clean
    assert clean == said.replace(AWS_SECRET, "[redacted:aws-secret]")


def test_a_private_key_block_is_replaced_whole_and_what_follows_stays() -> None:
    said = f"my key:\n{PEM}\nthat was it"
    assert redactor.text(said) == "my key:\n[redacted:private-key]\nthat was it"


def test_an_unterminated_private_key_is_replaced_to_the_end() -> None:
    cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9u"
    assert redactor.text(f"oops {cut}") == "oops [redacted:private-key]"


@pytest.mark.parametrize(
    ("said", "clean"),
    [
        (
            "Authorization: Bearer abc.DEF-123_xyz",
            "Authorization: Bearer [redacted:authorization]",
        ),
        (
            "curl -H 'authorization: Basic dXNlcjpodW50ZXIy' https://api.example.com",
            "curl -H 'authorization: Basic [redacted:authorization]' https://api.example.com",
        ),
        (
            '{"Authorization": "Bot abcdefgh1234"}',
            '{"Authorization": "Bot [redacted:authorization]"}',
        ),
        (
            f"authorization: Bearer {SECRETS['jwt'][0]}",
            "authorization: Bearer [redacted:jwt]",
        ),
    ],
)
def test_an_authorization_header_keeps_its_scheme_and_loses_its_credential(
    said: str, clean: str
) -> None:
    assert redactor.text(said) == clean


@pytest.mark.parametrize(
    ("said", "clean"),
    [
        ("password=hunter22", "password=[redacted:secret-value]"),
        ("db_password: s3cr3t!!", "db_password: [redacted:secret-value]"),
        ('{"apiKey": "abcdef123456"}', '{"apiKey": "[redacted:secret-value]"}'),
        ("SLACK_SIGNING_SECRET=8f14e45fceea167a", "SLACK_SIGNING_SECRET=[redacted:secret-value]"),
        (
            "https://x.example/cb?access_token=abcdef123&n=1",
            "https://x.example/cb?access_token=[redacted:secret-value]&n=1",
        ),
        (
            "postgres://app:pa55word@db.internal/app",
            "postgres://app:[redacted:url-password]@db.internal/app",
        ),
    ],
)
def test_a_secret_named_pair_or_a_url_password_loses_its_value(said: str, clean: str) -> None:
    assert redactor.text(said) == clean


def test_a_token_in_a_secret_named_pair_is_named_for_its_own_kind() -> None:
    token = SECRETS["slack-token"][0]
    assert redactor.text(f"SLACK_BOT_TOKEN={token}") == "SLACK_BOT_TOKEN=[redacted:slack-token]"


@pytest.mark.parametrize(
    "said",
    [
        "fixed in 3f786850e387550fdab836ed7e6dc881de23001b, see 3f78685",
        "request 123e4567-e89b-12d3-a456-426614174000 failed",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "antidisestablishmentarianism and pneumonoultramicroscopicsilicovolcanoconiosis",
        "docs at https://docs.example.com/guide/install?lang=en#setup and http://localhost:8080/",
        "def token_count(text: str) -> int:\n    return len(text.split())",
        "max_tokens: 4096, tokenizer: bert-base-uncased, temperature=0.2",
        "the password field is empty; the secret: keep calm",
        "sk-learn and ask-me-anything, akia is a name, eyJ is how JSON starts",
        "image: data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
        "meeting at 3:00, key points: budget, hiring; a.b.c and v1.2.3",
        "ask <@U0LEAD> or <!subteam^S0BACK>, not <!here>; :white_check_mark: done",
    ],
)
def test_ordinary_chat_text_is_left_alone(said: str) -> None:
    assert redactor.text(said) is said


def test_a_configured_secret_is_replaced_by_value_whatever_its_shape() -> None:
    configured = Redactor(["correct horse battery", "short"], SHAPES)
    said = "the key is correct horse battery, not short"
    assert configured.text(said) == "the key is [redacted:configured-secret], not short"


def test_the_manifests_secrets_are_read_from_the_variables_it_names() -> None:
    manifest = {
        "agents": {
            "lead": {
                "slack": {"bot_token_env": "LEAD_BOT", "signing_secret_env": "LEAD_SIGNING"},
                "discord": {"token_env": "LEAD_DISCORD", "user_id": "900000000000000001"},
                "harness": {
                    "api_key_env": "MODEL_KEY",
                    "model_env": "MODEL_NAME",
                    "env": {"OPENAI_API_KEY": "literal-key-in-manifest"},
                    "pass_env": ["ANTHROPIC_API_KEY", "AWS_REGION"],
                },
            }
        }
    }
    environ = {
        "LEAD_BOT": "plain-looking-bot-token",
        "LEAD_SIGNING": "signing-secret-value",
        "LEAD_DISCORD": "discord-bot-token-value",
        "MODEL_KEY": "model-api-key-value",
        "ANTHROPIC_API_KEY": "passed-to-the-agent-key",
        "MODEL_NAME": "qwen2.5-coder-instruct",
        "AWS_REGION": "eu-west-1",
    }
    configured = Redactor.for_manifest(manifest, environ)
    assert set(configured.configured) == {*list(environ.values())[:5], "literal-key-in-manifest"}
    said = "model qwen2.5-coder-instruct, key model-api-key-value"
    assert configured.text(said) == "model qwen2.5-coder-instruct, key [redacted:configured-secret]"


def test_the_shipped_manifest_gives_a_redactor_with_its_tokens() -> None:
    manifest = local_workspace().manifest
    names = {
        config.slack.bot_token_env
        for config in manifest.agents.values()
        if config.slack and config.slack.bot_token_env
    }
    environ = {name: f"{name.lower()}-value" for name in names}
    assert set(Redactor.for_manifest(manifest, environ).configured) == set(environ.values())


def test_a_structure_loses_secret_named_fields_and_secrets_inside_strings() -> None:
    token = SECRETS["slack-token"][0]
    payload = {
        "token": "verification",
        "event": {"text": f"use {token}", "client_secret": {"nested": 1}, "user": "U0ALICE"},
        "authorizations": [{"user_id": "U0LEAD", "apiKey": None}],
        "usage": {"prompt_tokens": 12, "max_tokens": 40},
        token: "a token as a key",
    }
    assert redactor.data(payload) == {
        "token": "[redacted:secret-field]",
        "event": {
            "text": "use [redacted:slack-token]",
            "client_secret": "[redacted:secret-field]",
            "user": "U0ALICE",
        },
        "authorizations": [{"user_id": "U0LEAD", "apiKey": None}],
        "usage": {"prompt_tokens": 12, "max_tokens": 40},
        "[redacted:slack-token]": "a token as a key",
    }


def test_a_structure_nested_past_the_limit_is_cut_not_searched() -> None:
    deep: object = "xoxb-1111111111-deep"
    for _ in range(200):
        deep = [deep]
    assert "xoxb-1111111111-deep" not in repr(redactor.data(deep))


@pytest.mark.parametrize(
    "name",
    [
        "token",
        "bot_token",
        "app-token",
        "Authorization",
        "signing_secret",
        "clientSecret",
        "X-Api-Key",
        "AWS_SECRET_ACCESS_KEY",
        "password",
        "Set-Cookie",
        "credentials",
        "apikey",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "tokens",
        "prompt_tokens",
        "token_type",
        "token_env",
        "authorizations",
        "author",
        "idempotencyKey",
        "monkey",
        "key",
        "secretary",
        "text",
    ],
)
def test_names_that_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def said_by(name: str, text: str) -> ChatEvent:
    """`text` said in the web chat's #general by ana, whose display name is `name`."""
    return ChatEvent(
        event_id="webchat:general:1",
        kind=EventKind.MESSAGE,
        platform="webchat",
        workspace_id="local",
        conversation=Conversation("general", ConversationKind.CHANNEL),
        author=Author("ana", display_name=name),
        created_at=parse_time("2026-01-01T00:00:00Z"),
        text=text,
    )


def test_an_event_loses_secrets_in_its_text_and_its_authors_name() -> None:
    token = SECRETS["github-token"][0]
    event = said_by(f"ana {token}", f"token {token}")
    clean = redactor.event(event)
    assert clean.text == "token [redacted:github-token]"
    assert clean.author == replace(event.author, display_name="ana [redacted:github-token]")
    plain = replace(event, text="hello", author=Author("ana", display_name="ana"))
    assert redactor.event(plain) is plain


def test_a_nul_or_half_of_a_utf16_pair_becomes_a_replacement_and_a_whole_one_stays() -> None:
    # Only a JSON \\u escape makes one; neither the ledger nor any JSON sent on can hold it.
    assert redactor.text("hi \ud800 there \udfff") == "hi \ufffd there \ufffd"
    assert redactor.text("nul \x00 here") == "nul \ufffd here"  # PostgreSQL's text holds none
    kept = "hi 😀 ünïcode " + "x" * 300
    assert redactor.text(kept) is kept
    clean = redactor.event(said_by("ana \udc00", "<@U0LEAD> can you \ud83d look?"))
    assert (clean.text, clean.author.display_name) == (
        "<@U0LEAD> can you \ufffd look?",
        "ana \ufffd",
    )


@pytest.mark.parametrize(
    "hostile",
    [
        "a" * 1_000_000,
        "a." * 500_000,
        "eyJ" * 333_333,
        "xoxb-" * 200_000,
        "password=" * 111_111,
        "-----BEGIN PRIVATE KEY-----" * 37_000,
        "://a:" * 200_000,
        "Authorization: Bearer " * 45_000,
        ("a" * 25 + "." + "b" * 6 + ".") * 30_000,
        "token_" * 166_666,
    ],
    ids=lambda text: repr(text[:12]),
)
def test_a_megabyte_of_hostile_text_is_redacted_in_linear_time(hostile: str) -> None:
    # Every rule's cheap first test passes, so every pattern runs over the whole megabyte.
    every_rule = (
        " -----BEGIN hooks.slack.com /webhooks/ xox sk-ant- ghp_ AKIA eyJ authorization ://"
    )
    with bounded("redacting a megabyte", seconds=5.0):
        Redactor(["configured-value-1"], SHAPES).text(hostile + every_rule + " secret token: x")


def test_a_platforms_secret_shape_is_found_only_by_a_redactor_given_it() -> None:
    shape = SecretShape("toy-token", r"toy_[a-z0-9]{12}", ("toy_",))
    said = "my key is toy_abcdef123456"
    assert Redactor().text(said) == said
    assert Redactor(shapes=[shape]).text(said) == "my key is [redacted:toy-token]"
    assert Redactor(shapes=[shape]).with_configured(["x" * 8]).text(said).endswith("toy-token]")


def test_a_shape_placed_before_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown rule nope"):
        Redactor(shapes=[SecretShape("toy-token", "toy", ("toy",), before="nope")])


def test_a_short_text_redacts_the_same_the_second_time_and_a_clean_one_stays_itself() -> None:
    redactor = Redactor(configured=["s3cr3t-value-123"])
    said = "key s3cr3t-value-123"
    first, again = redactor.text(said), redactor.text("key s3cr3t-value-" + "123")
    assert first == again == "key [redacted:configured-secret]"
    clean = "to_me/must_respond/buffered"
    redactor.text(clean)
    copy = "".join(["to_me/", "must_respond/buffered"])  # equal, another object
    assert redactor.text(copy) is copy


def test_what_a_redactor_remembers_stays_bounded() -> None:
    redactor = Redactor()
    for n in range(3 * 4096):
        assert redactor.text(f"line {n}") == f"line {n}"
    assert len(redactor._seen) <= 4096
