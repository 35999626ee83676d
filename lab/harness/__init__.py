"""The harnesses above the adapters they drive: the scenario language and runner (on the simulator, on real
processes, on the explorer's world) and the chaos run (the nemesis and its independent checker)."""
