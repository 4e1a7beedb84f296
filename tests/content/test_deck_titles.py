"""Titles are one line (content/titles.py): checked on uploads, where every line break a
front end shows counts; a one-line title passes whatever characters it holds."""

from __future__ import annotations

import pytest

from content.loader import parse_deck
from content.titles import title_problems
from content.untrusted import UntrustedDeck, parse_untrusted
from tests.helpers.paths import COMMUNITY_DECK

DECK = COMMUNITY_DECK


def titled(**titles: str):
    deck = parse_deck(DECK)
    mistakes = [m.model_copy(update={"title": titles.get(m.id, m.title)})
                for m in deck.mistakes]
    card = deck.cards[0]
    steps = [s.model_copy(update={"title": titles.get(f"step{i}", s.title)})
             for i, s in enumerate(card.solution)]
    cards = [card.model_copy(update={"solution": steps}), *deck.cards[1:]]
    return deck.model_copy(update={"title": titles.get("deck", deck.title),
                                   "mistakes": mistakes, "cards": cards})


@pytest.mark.parametrize("brk", ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\u2028",
                                 "\u2029"])
def test_every_line_break_a_front_end_shows_counts(brk):
    assert list(title_problems(titled(deck=f"One{brk}Two"))) == [
        (("title",), "the deck title must be one line: titles are shown inside lists and "
                     "replies; put the rest in the description or explanation")]


def test_mistake_and_solution_step_titles_are_checked_where_they_are():
    found = [path for path, _ in title_problems(titled(in_place="a\nb", step1="c\nd"))]
    assert found == [("mistakes", 0, "title"), ("cards", 0, "solution", 1, "title")]


@pytest.mark.parametrize("title", ["**Played here** [x](https://evil.example) @everyone",
                                   "Tabs\tare one line", "Zero\u200bwidth"])
def test_one_line_titles_pass_whatever_they_hold(title):
    assert list(title_problems(titled(deck=title, in_place=title))) == []


def test_an_upload_names_the_line_of_each_title():
    text = DECK.replace("title: Tensor basics", 'title: "Tensor\\nbasics"').replace(
        "title: Wrong attribute", 'title: "Wrong\\u2029attribute"')
    with pytest.raises(UntrustedDeck) as refused:
        parse_untrusted(text.encode())
    assert [p.split(":")[0] for p in refused.value.problems] == [
        "line 3, deck", "line 11, mistake wrong_attribute"]
