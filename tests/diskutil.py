"""Test helpers for durability: count the fsyncs a piece of code makes."""

import os
import stat


class FsyncCounter:
    """Counts fsyncs of regular files and of directories."""

    def __init__(self, monkeypatch):
        self.files = 0
        self.directories = 0
        real = os.fsync

        def counting(fd):
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                self.directories += 1
            else:
                self.files += 1
            real(fd)

        monkeypatch.setattr(os, "fsync", counting)
