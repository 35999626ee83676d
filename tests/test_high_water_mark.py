"""Exercise 1: the high-water mark is the largest index a majority holds, for odd AND even cluster sizes."""

from hypothesis import given, strategies as st

EXERCISES_NEEDED = (1,)  # with --impl exercises, skipped until these are started


def majority_definition(match_indexes):
    """The definition, by brute force: the largest k that at least a majority of nodes hold."""
    n = len(match_indexes)
    return max(k for k in range(0, max(match_indexes) + 1) if sum(m >= k for m in match_indexes) > n // 2)


def article_formula(match_indexes):
    """The article's `sort ascending; take [n / 2]`: right for odd n only."""
    return sorted(match_indexes)[len(match_indexes) // 2]


@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=7))
def test_high_water_mark_is_what_a_majority_holds(impl, match_indexes):
    assert impl.high_water_mark(list(match_indexes)) == majority_definition(match_indexes)


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


@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=7).filter(lambda m: len(m) % 2 == 1))
def test_article_formula_agrees_for_odd_sizes(match_indexes):
    assert article_formula(match_indexes) == majority_definition(match_indexes)


def test_single_node_cluster(impl):
    assert impl.high_water_mark([4]) == 4
