"""`hwm-lab explore`: search the runs of a simulated cluster for the smallest one that breaks a rule."""
