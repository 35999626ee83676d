"""Exercise 2 without the current-generation rule: commits an older generation's entry by counting (F8)."""

from solutions import *  # noqa: F401,F403


def on_replication_response(match_index, follower, acknowledged, current_hwm, generation, generation_at,
                            high_water_mark):
    match_index[follower] = max(match_index.get(follower, 0), acknowledged)
    return max(current_hwm, high_water_mark(list(match_index.values())))
