"""The grader: checks and their context, the worker process, the runner with time limits, the report, watch mode,
mutation testing."""
