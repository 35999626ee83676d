"""The harnesses above the adapters they drive: the scenario runner (on the simulator, on real processes, on the
explorer's world) and the nemesis."""
