"""The run layer of `opkit test`: options, the run's configuration, pools, interrupts, the cluster."""
