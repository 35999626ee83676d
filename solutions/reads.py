"""Exercise 4 (reference): read gating."""


def check_read(index: int, high_water_mark: int) -> str | None:
    """None if the entry at `index` may be served; otherwise the refusal to give the client."""
    if index < 1:
        return f"not available: index {index} does not exist (the log starts at index 1)"
    if index > high_water_mark:
        return f"not available: index {index} is above the high-water mark {high_water_mark}"
    return None
