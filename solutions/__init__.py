"""Reference answers to the HWM Lab exercises: the same interface as `exercises/`, see `lab.core.interface`."""

from .high_water_mark import high_water_mark
from .leader import on_replication_response
from .follower import follower_append
from .reads import check_read
from .wal_truncation import plan_truncation
from .leader_epoch import epoch_truncation_point, leader_epoch_end

__all__ = [
    "high_water_mark",
    "on_replication_response",
    "follower_append",
    "check_read",
    "plan_truncation",
    "leader_epoch_end",
    "epoch_truncation_point",
]
