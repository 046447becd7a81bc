import pytest
from fuzz.bounds import timed

from c2a.platforms import BUILTIN, installed
from core.intent import (
    DEFAULT_PATTERNS,
    DEFAULT_RULES,
    READ_LIMIT,
    Intent,
    IntentClassifier,
    IntentRules,
    topic,
)

# Each built-in platform with the markup its adapter brings: every test below holds for each.
MARKUPS = {name: platform.markup for name, platform in installed().items() if name in BUILTIN}
RULES = DEFAULT_RULES.with_markup(MARKUPS)


def intents(text: str, rules: IntentRules = RULES) -> frozenset[Intent]:
    """The intents of `text`, the same on every built-in platform."""
    found = {name: rules.classify(text, name) for name in MARKUPS}
    assert len(set(found.values())) == 1, found
    return next(iter(found.values()))


# Thanks


@pytest.mark.parametrize(
    "text",
    [
        "thanks",
        "Thank you so much!!",
        "thx",
        "ty!",
        "tysm",
        "Cheers",
        "got it, thanks",
        "ok",
        "k",
        "kk",
        "cool cool cool",
        "Great, thanks a lot!",
        "sounds good",
        "np",
        "no problem",
        "much appreciated",
        "appreciate it 🙏",
        "will do",
        "noted.",
        "thaaanks",
        "Thanks for the help everyone :)",
    ],
)
def test_thanks_in_a_message_with_only_thanks_is_thanks(text: str) -> None:
    assert intents(text) == {Intent.THANKS}


def test_thanks_with_mentions_around_it_is_thanks() -> None:
    assert intents("<@U111> thanks! <@U222|bob>") == {Intent.THANKS}
    assert intents("<@!123456> ty") == {Intent.THANKS}


def test_only_gratitude_emoji_is_thanks() -> None:
    assert intents("🙏") == {Intent.THANKS}
    assert intents("👍🏽 🎉") == {Intent.THANKS}
    assert intents("❤️") == {Intent.THANKS}


def test_only_gratitude_slack_shortcodes_is_thanks() -> None:
    assert intents(":pray: :+1::skin-tone-2:") == {Intent.THANKS}
    assert intents("<@U111> :thumbsup:") == {Intent.THANKS}


def test_an_emoji_outside_the_gratitude_set_alone_is_not_thanks() -> None:
    assert intents("🔥") == frozenset()
    assert intents("🚨") == frozenset()


def test_thanks_is_exclusive_so_exclamation_marks_do_not_make_it_urgent() -> None:
    assert intents("THANK YOU!!!") == {Intent.THANKS}


def test_thanks_followed_by_a_question_is_not_thanks() -> None:
    result = intents("thanks, can you also check the staging logs?")
    assert Intent.THANKS not in result
    assert Intent.QUESTION in result
    assert Intent.ASSIGNMENT in result


def test_ok_followed_by_a_question_is_a_question_not_thanks() -> None:
    assert intents("ok so how do I restart nginx?") == {Intent.QUESTION}


def test_ok_with_a_question_mark_is_a_question() -> None:
    assert intents("ok?") == {Intent.QUESTION}


def test_thanks_with_more_content_is_not_thanks() -> None:
    assert Intent.THANKS not in intents("thanks, the fix worked on staging too")
    assert Intent.THANKS not in intents("great, now deploy it to prod")


def test_thanks_with_a_bare_link_is_not_only_thanks() -> None:
    assert Intent.THANKS not in intents("thanks https://example.com/runbook")


def test_thanks_under_a_quote_is_thanks() -> None:
    assert intents("&gt; can you deploy the hotfix?\nthanks, done") != {Intent.THANKS}
    assert intents("&gt; can you deploy the hotfix?\nthanks!") == {Intent.THANKS}


def test_only_a_mention_is_not_thanks() -> None:
    assert intents("<@U111>") == frozenset()
    assert intents("<!here> <@&456>") == frozenset()
    assert intents("@everyone") == frozenset()


@pytest.mark.parametrize("text", ["now", "<@U1> now", "that", "it", "then", "<@U1> it"])
def test_a_word_that_only_accompanies_thanks_is_not_thanks_alone(text: str) -> None:
    # "@lead now" presses for an answer; it must not be read as a closing.
    assert Intent.THANKS not in intents(text)


def test_an_empty_message_has_no_intent() -> None:
    assert intents("") == frozenset()
    assert intents("   \n ") == frozenset()


# Questions


def test_a_question_mark_makes_a_question() -> None:
    assert Intent.QUESTION in intents("deploy finished on staging?")


def test_an_interrogative_opener_makes_a_question_without_a_question_mark() -> None:
    assert Intent.QUESTION in intents("<@U111> what's the status of the migration")
    assert Intent.QUESTION in intents("does anyone know where the runbook lives")


def test_an_imperative_starting_with_do_is_not_a_question() -> None:
    assert Intent.QUESTION not in intents("do this before lunch")


def test_a_condition_starting_with_when_is_not_a_question() -> None:
    result = intents("when you get a chance, rotate the staging keys")
    assert Intent.QUESTION not in result
    assert Intent.ASSIGNMENT in result


def test_a_question_mark_inside_code_is_not_a_question() -> None:
    assert Intent.QUESTION not in intents("FYI the regex is `a?b` now")


# Assignment and approval


def test_could_you_is_an_assignment() -> None:
    assert intents("<@U111> could you take care of the release notes?") == {
        Intent.ASSIGNMENT,
        Intent.QUESTION,
    }


def test_please_and_a_verb_is_an_assignment() -> None:
    assert Intent.ASSIGNMENT in intents("please review PR 42")
    assert Intent.ASSIGNMENT in intents("please leave a review on the PR")


def test_todo_is_an_assignment() -> None:
    assert Intent.ASSIGNMENT in intents("TODO: rotate the keys")


def test_lgtm_ship_it_is_an_approval() -> None:
    assert intents("LGTM, ship it") == {Intent.APPROVAL}


def test_asking_whether_something_is_approved_is_not_an_approval() -> None:
    assert intents("is it approved?") == {Intent.QUESTION}
    assert intents("should I go ahead?") == {Intent.QUESTION}
    assert intents("approved?") == {Intent.QUESTION}


def test_negated_approval_is_not_an_approval() -> None:
    assert Intent.APPROVAL not in intents("not approved yet, the tests are red")
    assert Intent.APPROVAL not in intents("don't ship it")


def test_approval_then_a_request_keeps_the_approval() -> None:
    assert Intent.APPROVAL in intents("lgtm. can you merge it?")


# Blocker, urgent, status


def test_stuck_is_a_blocker() -> None:
    assert Intent.BLOCKER in intents("I'm stuck on the DB migration, can you help?")


def test_i_am_not_blocked_is_not_a_blocker() -> None:
    assert Intent.BLOCKER not in intents("I'm not blocked anymore")
    assert Intent.BLOCKER not in intents("no longer blocked, carrying on")


def test_asking_if_someone_is_blocked_is_not_a_blocker_report() -> None:
    assert intents("are you blocked?") == {Intent.QUESTION}


def test_prod_down_with_exclamations_is_urgent() -> None:
    assert Intent.URGENT in intents("<!here> prod is down!!!")
    assert Intent.URGENT in intents("sev 1 in progress")
    assert Intent.URGENT in intents("need this asap")


def test_not_urgent_is_not_urgent() -> None:
    assert Intent.URGENT not in intents("not urgent, but could you look at the flaky test?")
    assert Intent.URGENT not in intents("non-urgent: dependency bumps")


@pytest.mark.parametrize(
    "text",
    [
        "status: migration 40% done",
        "FYI the nightly job finished",
        "[INFO] nightly job finished in 4m",
        "Build #123 failed",
        "deployed v1.2.3 to staging",
        "Deployment started",
        "CI passed on main",
        "2026-06-24T10:00:01Z worker restarted",
    ],
)
def test_status_broadcasts_are_status(text: str) -> None:
    assert Intent.STATUS in intents(text)


def test_asking_whether_it_was_deployed_is_not_a_status() -> None:
    assert intents("has it been deployed to prod?") == {Intent.QUESTION}


# Leave and stop


@pytest.mark.parametrize(
    "text",
    [
        "please leave this channel",
        "<@U111> leave",
        "go away",
        "stop replying here",
        "you can leave now",
        "could you please leave the thread?",
        "you're not needed here",
    ],
)
def test_requests_to_leave_are_leave(text: str) -> None:
    assert Intent.LEAVE in intents(text)


def test_please_leave_a_comment_is_not_a_request_to_leave() -> None:
    assert Intent.LEAVE not in intents("please leave a comment on the doc")


def test_dont_leave_is_not_leave() -> None:
    assert Intent.LEAVE not in intents("don't go away, we still need you")


@pytest.mark.parametrize(
    "text",
    [
        "stop",
        "Stop!",
        "<@U111> cancel that",
        "abort",
        "never mind",
        "nevermind",
        "hey, stop working on the migration",
        "cancel the deploy",
        "please stop it now",
        "can you stop what you're doing?",
    ],
)
def test_stop_commands_are_stop(text: str) -> None:
    assert Intent.STOP in intents(text)


def test_a_stop_musing_with_a_question_mark_is_a_question_not_stop() -> None:
    assert intents("stop the deploy at 5pm? no wait") == {Intent.QUESTION}


def test_stop_in_the_middle_of_a_sentence_is_not_stop() -> None:
    assert Intent.STOP not in intents("I can't stop thinking about the cache bug")
    assert Intent.STOP not in intents("don't stop")


def test_stop_inside_a_quote_is_not_stop() -> None:
    assert Intent.STOP not in intents("> stop\nwhy did the bot say this?")


# Markup: each platform's text is read in the markup its adapter brings


def test_a_platform_without_markup_reads_its_text_as_plain_text() -> None:
    # A toy platform writes no `<...>` tokens, shortcodes, escapes, code or quotes.
    assert RULES.classify("thanks <@U1>", "toy") == frozenset()
    assert RULES.classify(":pray:", "toy") == frozenset()
    assert RULES.classify("&gt; stop", "toy") == frozenset()
    assert Intent.ASSIGNMENT in RULES.classify("> can you deploy", "toy")
    assert intents("> can you deploy") == frozenset()  # quoted on the built-in platforms
    assert Intent.QUESTION in RULES.classify("`why?`", "toy")


def test_plain_text_still_sets_aside_links_names_and_emoji() -> None:
    assert RULES.classify("@ana thanks 🙏 :)", "toy") == {Intent.THANKS}
    assert RULES.classify("thanks https://example.com", "toy") == frozenset()
    assert RULES.classify("🙏", "toy") == {Intent.THANKS}


def test_the_same_markup_read_for_a_platform_is_read_for_any_name_it_is_given() -> None:
    rules = DEFAULT_RULES.with_markup({"toy": MARKUPS["slack"]})
    assert rules.classify("thanks <@U1>", "toy") == {Intent.THANKS}
    assert DEFAULT_RULES.classify("thanks <@U1>", "slack") == frozenset()  # no markup given


def test_overridden_rules_keep_their_markup() -> None:
    rules = RULES.with_overrides({"thanks": {"add": ["merci"]}})
    assert intents("merci <@U1> :pray:", rules) == {Intent.THANKS}


# Overrides


def test_added_thanks_phrase_is_thanks() -> None:
    rules = RULES.with_overrides({"thanks": {"add": ["merci", "merci beaucoup"]}})
    assert intents("Merci beaucoup !", rules) == {Intent.THANKS}
    assert intents("merci") == frozenset()


def test_removed_thanks_phrase_is_no_longer_thanks() -> None:
    rules = RULES.with_overrides({"thanks": {"remove": ["cool"]}})
    assert intents("cool", rules) == frozenset()
    assert intents("thanks", rules) == {Intent.THANKS}


def test_added_pattern_is_matched() -> None:
    rules = RULES.with_overrides({"urgent": {"patterns_add": ["sev ?[12]"]}})
    assert Intent.URGENT in intents("SEV2 declared for payments", rules)
    assert Intent.URGENT not in intents("SEV2 declared for payments")


def test_unknown_intent_in_overrides_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown intent 'gratitude'"):
        DEFAULT_RULES.with_overrides({"gratitude": {"add": ["merci"]}})


def test_unknown_override_key_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown key 'append' under intent\.thanks"):
        DEFAULT_RULES.with_overrides({"thanks": {"append": ["merci"]}})


def test_a_bare_string_instead_of_a_list_is_refused() -> None:
    with pytest.raises(ValueError, match="must be a list of strings"):
        DEFAULT_RULES.with_overrides({"thanks": {"add": "merci"}})


def test_removing_a_phrase_that_is_not_there_is_refused() -> None:
    with pytest.raises(ValueError, match="'kewl' is not a phrase of thanks"):
        DEFAULT_RULES.with_overrides({"thanks": {"remove": ["kewl"]}})


def test_a_bad_pattern_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"invalid pattern 'sev \(1' for intent urgent"):
        DEFAULT_RULES.with_overrides({"urgent": {"patterns_add": ["sev (1"]}})


# Keywords, a speed-up, never change a result


@pytest.mark.parametrize(
    "text",
    [
        "please leave now", "please leavenow", "can you leave this channel", "you can leave.",
        "please leave a review", "please go away", "the error went away", "get out the logs",
        "SEV1 in payments", "it is not sev1", "sev - 0 declared", "prod is down!!!",
        "the db went down",
        "I assigned you the ticket", "build #12 passed", "run 3 is red", "CI is green",
        "deployed v2 to prod", "deployment finished", "status: all good", "[INFO] started",
        "2024-01-02 12:30 nightly job", "never mind", "nevermind.", "hey, stop",
        "stop working on that", "could you please stop?", "what's up with staging",
        "ok so how do i restart", "done. is it ready", "any ideas", "it's on my to-do list",
        "I'm blocked", "ship it", "go for it", "ok thanks!!!", "n\u0131ce", "wh\u0131ch one",
    ],
)  # fmt: skip
def test_keywords_only_skip_searches_that_cannot_succeed(text: str) -> None:
    # The same patterns written differently have no keywords, so they are always searched.
    patterns = {i: tuple(f"(?:{p})" for p in DEFAULT_PATTERNS[i]) for i in Intent}
    assert intents(text) == intents(text, IntentRules(patterns=patterns).with_markup(MARKUPS))


# The interface


def test_rules_satisfy_the_classifier_protocol() -> None:
    classifier: IntentClassifier = IntentRules()
    assert classifier.classify("thanks", "any") == {Intent.THANKS}
    assert classifier.has("thanks", Intent.THANKS, "any")


@pytest.mark.parametrize(
    "text",
    ["<", "<>", "<@", "```", "`", ":", "::skin-tone-2:", "\ud800", "\x00?", "a" * 10_000],
)
def test_classify_never_raises(text: str) -> None:
    assert isinstance(intents(text), frozenset)


def test_classify_is_deterministic() -> None:
    text = "URGENT: prod is down, can you take a look?"
    assert intents(text) == intents(text) == intents(text, IntentRules().with_markup(MARKUPS))


# Topics


def test_topic_names_the_highest_priority_intent() -> None:
    assert topic(frozenset({Intent.QUESTION, Intent.ASSIGNMENT})) == "an assignment"
    assert topic(frozenset({Intent.STOP, Intent.ASSIGNMENT})) == "a request to stop"
    assert topic(frozenset({Intent.LEAVE, Intent.STOP})) == "a request to leave"


def test_topic_of_urgency_alone_is_an_urgent_request() -> None:
    assert topic(frozenset({Intent.URGENT})) == "an urgent request"


def test_urgency_qualifies_the_topic() -> None:
    assert topic(intents("URGENT: can you look at prod?")) == "an urgent assignment"
    assert topic(frozenset({Intent.URGENT, Intent.BLOCKER})) == "an urgent blocker report"


def test_topic_of_thanks_and_of_status() -> None:
    assert topic(frozenset({Intent.THANKS})) == "thanks or an acknowledgement"
    assert topic(frozenset({Intent.STATUS})) == "a status update"
    assert topic(frozenset({Intent.APPROVAL})) == "an approval"
    assert topic(frozenset({Intent.QUESTION})) == "a question"


def test_topic_without_intents_is_a_message_or_a_reply() -> None:
    assert topic(frozenset()) == "a message"
    assert topic(frozenset(), is_reply=True) == "a reply"


def test_topic_mentions_replies_and_attachments() -> None:
    assert topic(frozenset({Intent.QUESTION}), is_reply=True) == "a question in reply"
    assert topic(frozenset(), has_files=True) == "a message with attachments"
    assert (
        topic(frozenset({Intent.APPROVAL}), has_files=True, is_reply=True)
        == "an approval in reply with attachments"
    )


def test_topic_never_repeats_the_message() -> None:
    text = "please deploy build 9f3c to prod-eu-west"
    assert not set(topic(intents(text)).split()) & {"deploy", "9f3c", "prod-eu-west"}


def test_describing_something_going_away_is_not_a_request_to_leave() -> None:
    assert Intent.LEAVE not in intents("restarting made the error go away")
    assert Intent.LEAVE not in intents("get out the logs please")


# One intent alone


@pytest.mark.parametrize(
    "text",
    [
        "",
        "thanks",
        "<@U111> thanks! <@U222|bob>",
        "👍🏽 🎉",
        "thanks, can you also check the staging logs?",
        "ok so how do I restart nginx?",
        "what's the status of the migration",
        "could you rerun the flaky tests please",
        "TODO: rotate the keys",
        "lgtm, ship it",
        "is this approved?",
        "I'm not blocked",
        "stuck on the failing migration",
        "PROD IS DOWN!!!",
        "not urgent, whenever you can",
        "status: migration 40% done",
        "deployed v1.2.3 to staging",
        "was it deployed to staging?",
        "please leave this channel",
        "please leave a comment on the PR",
        "stop, stop everything",
        "`rm -rf build` then rerun",
        "see https://example.com/status for details",
        "&gt; can you deploy the hotfix?\nthanks!",
        "the ıstanbul mirror is down",
    ],
)
def test_has_agrees_with_classify_on_every_intent(text: str) -> None:
    for platform in (*MARKUPS, "plain"):
        found = RULES.classify(text, platform)
        for intent in Intent:
            assert RULES.has(text, intent, platform) == (intent in found), (platform, intent)


# Long messages


# Messages on which a phrase's negation and question guards took time quadratic in their length.
LONG_MESSAGES = {
    "negated phrases in one clause": "not blocked " * 10_000,
    "negated phrases in many clauses": "not blocked. " * 10_000,
    "phrases in one long question": "i'm not blocked? " * 10_000,
    "reports in one long question": "deployed to a " * 10_000 + "?",
}


@pytest.mark.parametrize("text", LONG_MESSAGES.values(), ids=LONG_MESSAGES.keys())
def test_a_long_message_is_read_in_time(text: str) -> None:
    timed("classify", lambda: RULES.classify(text, "slack"))
    for intent in Intent:
        timed("has", lambda: RULES.has(text, intent, "slack"))  # noqa: B023 (called at once)


def test_a_message_longer_than_the_read_limit_is_read_by_its_start() -> None:
    filler = "and so on " * (READ_LIMIT // 10)
    assert Intent.URGENT in intents("urgent: " + filler)
    assert Intent.URGENT not in intents(filler + "urgent")


def test_a_cut_message_never_ends_where_it_was_cut() -> None:
    assert Intent.STOP not in intents("stop" + " " * READ_LIMIT + "the build later?")
    assert intents("thanks " * READ_LIMIT) == frozenset()


def test_a_flood_of_messages_full_of_guarded_phrases_is_read_in_time() -> None:
    # Each guard used to scan the text from its start: over 30 ms per message of this length.
    flood = [f"{i} " + "not blocked " * (READ_LIMIT // 12) for i in range(150)]
    timed("classify", lambda: [RULES.classify(text, "slack") for text in flood])
