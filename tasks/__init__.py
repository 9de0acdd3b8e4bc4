"""The units of work and the domain code they run: plain functions first; the few Prefect
task wrappers sit at coarse grain in `testprism.tasks.units`."""
