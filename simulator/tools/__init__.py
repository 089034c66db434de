"""Libraries behind snapsim commands that are not experiments: micro-benchmarks of the model."""
