"""The domain, one folder per stage of the pipeline (docs/architecture.md): plain functions
and typed records that run without Prefect; flows/ wraps them as coarse tasks."""
