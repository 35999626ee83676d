"""HWM Lab exercises: write the key pieces of the High-Water Mark pattern.

Each module holds one exercise: a function with a fixed signature and a docstring that teaches; its body raises
NotImplementedError until you write it. Check your work with `hwm-lab exercise check N`; run the cluster on your
own code with `hwm-lab up --impl exercises`. The interface is described in lab/core/interface.py.
"""

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
