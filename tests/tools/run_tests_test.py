"""The test runner's report: skipped cases grouped per (backend, reason),
cases counted over a sharded target's shards."""
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

    def test_shards_add_up_from_build_events(self):
        with tempfile.TemporaryDirectory() as tmp:
            def junit(name, cases):
                path = os.path.join(tmp, name)
                with open(path, "w") as f:
                    f.write("<testsuites><testsuite>" + cases + "</testsuite></testsuites>")
                return "file://" + path

            def result(shard, attempt, uri):
                return {"id": {"testResult": {"label": "//t:fuzz", "run": 1, "shard": shard,
                                              "attempt": attempt}},
                        "testResult": {"testActionOutput": [
                            {"name": "test.log", "uri": uri[:-4] + ".log"},
                            {"name": "test.xml", "uri": uri}]}}
            events = [
                result(1, 1, junit("s1.xml", '<testcase classname="m" name="t[cpu-0]"/>')),
                result(2, 1, junit("s2a.xml", '<testcase classname="m" name="t[cpu-1]">'
                                              '<failure/></testcase>')),
                result(2, 2, junit("s2b.xml", '<testcase classname="m" name="t[cpu-1]"/>')),
                result(3, 1, junit("s3.xml", '<testcase classname="m" name="t[cpu-2]">'
                                             '<skipped message="why"/></testcase>')),
            ]
            files = run_tests.xml_files(events)
            self.assertEqual(len(files["//t:fuzz"]), 3)
            passed, failed, skipped = run_tests.count_cases(files["//t:fuzz"])
        self.assertEqual(passed, ["m.t[cpu-0]", "m.t[cpu-1]"])
        self.assertEqual(failed, [])
        self.assertEqual(skipped, [("m.t[cpu-2]", "why")])

    def test_longest_tests_name_their_shard(self):
        def result(label, shard, millis):
            return {"id": {"testResult": {"label": label, "run": 1, "shard": shard,
                                          "attempt": 1}},
                    "testResult": {"testAttemptDurationMillis": str(millis)}}
        events = [result("//t:a", 1, 75000), result("//t:fuzz", 2, 90400),
                  result("//t:fuzz", 1, 61000)]
        self.assertEqual(run_tests.longest_tests(events, count=2),
                         "//t:fuzz shard 2 90 s, //t:a 75 s")

    def test_no_cases_counts_as_none(self):
        self.assertIsNone(run_tests.count_cases([]))
        self.assertIsNone(run_tests.count_cases(["/nonexistent/test.xml"]))

    def test_shard_directories_under_testlogs(self):
        with tempfile.TemporaryDirectory() as tmp:
            for shard in (2, 1):
                os.makedirs(os.path.join(tmp, "bazel-testlogs", "t", "fuzz", f"shard_{shard}_of_2"))
                open(os.path.join(tmp, "bazel-testlogs", "t", "fuzz", f"shard_{shard}_of_2",
                                  "test.xml"), "w").close()
            with unittest.mock.patch.object(run_tests, "ROOT", tmp):
                paths = run_tests.xml_paths("//t:fuzz")
        self.assertEqual([os.path.basename(os.path.dirname(p)) for p in paths],
                         ["shard_1_of_2", "shard_2_of_2"])


if __name__ == "__main__":
    unittest.main()
