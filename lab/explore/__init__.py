"""`hwm-lab explore`: search the runs of a simulated cluster (its world: lab.sim.world) for the smallest one that
breaks a rule."""
