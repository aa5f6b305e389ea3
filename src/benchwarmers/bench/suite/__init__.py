"""The suite: task files, checkers, the sandboxed unit-test runner, the
paced runner and the SWE-rebench importer. The onboarding and scheduler use
`run_suite` and `next_tasks_for`."""

from benchwarmers.bench.suite.runner import SuiteRun, next_tasks_for, run_suite, suite_summary
from benchwarmers.bench.suite.tasks import Task, load_tasks

__all__ = ["SuiteRun", "Task", "load_tasks", "next_tasks_for", "run_suite", "suite_summary"]
