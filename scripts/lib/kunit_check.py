"""Reads cachescope logs with Linux's own KTAP parser (tools/testing/kunit/kunit_parser.py, from
the kernel source tree; never copied into this repository) and requires, for every complete log
(one with the `end` record), a clean parse whose case counts equal the `end` record's.

usage: python3 kunit_check.py KUNIT_DIR LOG...   (exit 0 all agree, 1 otherwise)
"""
import io
import json
import sys

sys.path.insert(0, sys.argv[1])
import kunit_parser  # noqa: E402  (from KUNIT_DIR)
import kunit_printer  # noqa: E402
from kunit_parser import TestStatus  # noqa: E402

END = '# cs: {"record":"end"'
bad = 0
checked = 0
for path in sys.argv[2:]:
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    end = [json.loads(l.split("# cs: ", 1)[1]) for l in lines if l.startswith(END)]
    if not end:
        continue  # cut short on purpose (panic, hang, refused arguments): not a complete run
    end = end[-1]
    parser_output = io.StringIO()  # its own progress lines: shown only when it disagrees
    kunit_printer.stdout._output = parser_output  # the Printer kunit_parser writes through
    test = kunit_parser.parse_run_tests(l + "\n" for l in lines)
    c = test.counts
    # kunit_parser's own rule: any failure fails the run; a run whose every case skipped is
    # SKIPPED (e.g. the mistakes suite without the cache model, the smp suite on one core).
    if end["failed"]:
        want_status = TestStatus.FAILURE
    elif end["passed"] == 0 and end["skipped"] > 0:
        want_status = TestStatus.SKIPPED
    else:
        want_status = TestStatus.SUCCESS
    got = (c.passed, c.failed, c.skipped, c.crashed, c.errors)
    want = (end["passed"], end["failed"], end["skipped"], 0, 0)
    checked += 1
    if test.status != want_status or got != want:
        bad += 1
        print(parser_output.getvalue())
        print(f"{path}: kunit_parser says {test.status.name} passed={c.passed} failed={c.failed} skipped={c.skipped} "
              f"crashed={c.crashed} errors={c.errors}; the end record says passed={end['passed']} failed={end['failed']} "
              f"skipped={end['skipped']}")
    else:
        print(f"{path}: kunit_parser {test.status.name}: {c.passed} passed, {c.failed} failed, {c.skipped} skipped, 0 errors = end record")
print(f"kunit-check: {checked} complete logs, {checked - bad} agree with Linux's kunit_parser, {bad} do not")
sys.exit(1 if bad or not checked else 0)
