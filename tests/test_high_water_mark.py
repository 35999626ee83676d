"""Exercise 1: the high-water mark is the largest index a majority holds, for odd AND even cluster sizes. Each answer
is judged as the lab judges it (lab.core.judges: a majority holds the index returned, and no majority holds the next
one), never by comparison with an answer computed here."""

from hypothesis import given, strategies as st

from lab.core.judges import high_water_mark as judged

EXERCISES_NEEDED = (1,)  # with --impl exercises, skipped until these are started


def article_formula(match_indexes):
    """The article's `sort ascending; take [n / 2]`: right for odd n only."""
    return sorted(match_indexes)[len(match_indexes) // 2]


@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=7))
def test_high_water_mark_is_what_a_majority_holds(impl, match_indexes):
    got = impl.high_water_mark(list(match_indexes))
    assert judged(match_indexes, got) is None, f"high_water_mark({match_indexes}) returned {got}: " \
                                               f"{judged(match_indexes, got)}"


@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=7))
def test_high_water_mark_does_not_depend_on_order_or_mutate(impl, match_indexes):
    before = list(match_indexes)
    assert impl.high_water_mark(list(reversed(match_indexes))) == impl.high_water_mark(list(match_indexes))
    impl.high_water_mark(match_indexes)
    assert match_indexes == before


def test_n4_even_cluster_examples(impl):
    # SCENARIOS.md N4: [7, 5, 5, 3] -> 5; [9, 7, 3, 3] -> 3 (the article's formula says 7).
    assert impl.high_water_mark([7, 5, 5, 3]) == 5
    assert impl.high_water_mark([9, 7, 3, 3]) == 3
    assert article_formula([9, 7, 3, 3]) == 7  # the bug this exercise is about
    assert str(judged([9, 7, 3, 3], 7)) == "only 2 of the 4 match indexes reach index 7 (a majority is 3)"


@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=7).filter(lambda m: len(m) % 2 == 1))
def test_article_formula_agrees_for_odd_sizes(match_indexes):
    assert judged(match_indexes, article_formula(match_indexes)) is None


def test_the_judge_tells_each_wrong_answer():
    # The judge this file trusts could fail: every other answer for a few lists is found wrong, and why.
    for match, right in (([7, 5, 5, 3], 5), ([9, 7, 3, 3], 3), ([3, 3, 1], 3), ([4], 4), ([0, 1], 0)):
        assert judged(match, right) is None
        assert all(judged(match, other) is not None for other in range(-1, 11) if other != right)
    assert str(judged([0, 1], 0 + 1)) == "only 1 of the 2 match indexes reaches index 1 (a majority is 2)"
    assert str(judged([7, 5, 5, 3], 3)) == "3 of the 4 match indexes reach index 4 (a majority is 3): the high-water " \
                                           "mark is at least 4"


def test_single_node_cluster(impl):
    assert impl.high_water_mark([4]) == 4
