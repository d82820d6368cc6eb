"""The test runner's report: skipped cases grouped per (backend, reason)."""
import contextlib
import io
import os
import sys
import tempfile
import unittest
import unittest.mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import run_tests  # noqa: E402  pylint: disable=wrong-import-position

SKIPPED = [
    ("//tests/python:a", "m.test_x[vulkan-f32]", "adstack on SPIR-V"),
    ("//tests/python:a", "m.test_y[vulkan-f64]", "adstack on SPIR-V"),
    ("//tests/python:b", "m.test_z[cuda]", "cuda: no driver"),
    ("//tests/cpp:c", "Suite.Case", "no GPU"),
]


def report(skipped, verbose, tags=None):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_tests.report_skipped(skipped, verbose, tags)
    return out.getvalue().splitlines()


class ReportTest(unittest.TestCase):

    def test_groups_one_line_per_backend_and_reason(self):
        lines = report(SKIPPED, verbose=False)
        self.assertEqual(lines[:3], [
            "SKIPPED     1 on any: no GPU",
            "SKIPPED     1 on cuda: cuda: no driver",
            "SKIPPED     2 on vulkan: adstack on SPIR-V",
        ])
        self.assertTrue(lines[3].startswith("4 skipped"))
        self.assertEqual(len(lines), 4)

    def test_verbose_lists_every_case(self):
        lines = report(SKIPPED, verbose=True)
        self.assertEqual(len(lines), 5)
        self.assertIn("SKIPPED //tests/python:a m.test_y[vulkan-f64]: "
                      "adstack on SPIR-V", lines)

    def test_nothing_skipped_prints_nothing(self):
        self.assertEqual(report([], verbose=False), [])

    def test_backend_of(self):
        self.assertEqual(run_tests.backend_of("m.t[cpu]"), "cpu")
        self.assertEqual(run_tests.backend_of("m.t[f32-metal]"), "metal")
        self.assertEqual(run_tests.backend_of("m.t[3]"), "any")
        self.assertEqual(run_tests.backend_of("Suite.Case"), "any")

    def test_case_without_backend_counts_for_its_target_tag(self):
        lines = report(SKIPPED, verbose=False, tags={"//tests/cpp:c": "cpu"})
        self.assertEqual(lines[0], "SKIPPED     1 on cpu: no GPU")

    def test_target_backends_from_build_events(self):
        events = [
            {"id": {"targetConfigured": {"label": "//t:a"}},
             "configured": {"targetKind": "py_test rule", "tag": ["vulkan"]}},
            {"id": {"targetConfigured": {"label": "//t:b"}},
             "configured": {"tag": ["manual"]}},
            {"id": {"testSummary": {"label": "//t:a"}}},
        ]
        self.assertEqual(run_tests.target_backends(events), {"//t:a": "vulkan"})

    def test_backend_lines(self):
        outcomes = run_tests.collections.Counter({
            ("cpu", "passed"): 3, ("cpu", "skipped"): 1, ("vulkan", "failed"): 2})
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            run_tests.report_backends(outcomes)
        self.assertEqual(out.getvalue().splitlines(), [
            "backend cpu     3 passed, 0 failed, 1 skipped",
            "backend vulkan  0 passed, 2 failed, 0 skipped",
        ])

    def test_verbose_flag_is_not_passed_to_bazel(self):
        flags, targets = run_tests.split_args(["-v", "--config=cpu"])
        self.assertEqual(flags, ["--config=cpu"])
        self.assertEqual(targets, ["//..."])

    def test_consumer_runs_with_the_whole_cpu_suite_only(self):
        env = dict(os.environ)
        env.pop("QD_TEST_CONSUMER", None)
        with unittest.mock.patch.dict(os.environ, env, clear=True):
            self.assertTrue(run_tests.wants_consumer([], ["//..."]))
            self.assertTrue(run_tests.wants_consumer(["--config=cpu"], ["//..."]))
            self.assertFalse(run_tests.wants_consumer(["--config=vulkan"], ["//..."]))
            self.assertFalse(run_tests.wants_consumer([], ["//tests/cpp/..."]))
        with unittest.mock.patch.dict(os.environ, {"QD_TEST_CONSUMER": "0"}):
            self.assertFalse(run_tests.wants_consumer([], ["//..."]))

    def test_consumer_passes_on_exit_0_with_a_pass_line(self):
        def fake(stdout, code):
            return unittest.mock.patch.object(
                run_tests.subprocess, "run",
                return_value=run_tests.subprocess.CompletedProcess([], code, stdout))
        for stdout, code, ok in (("n = 5\nPASS (tol)\n", 0, True),
                                 ("n = 5\nFAIL (tol)\n", 1, False),
                                 ("ERROR: build failed\n", 1, False),
                                 ("no verdict\n", 0, False)):
            with fake(stdout, code), contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(run_tests.run_consumer(), ok, stdout)


if __name__ == "__main__":
    unittest.main()
