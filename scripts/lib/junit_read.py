"""The JUnit readers of scripts/check-junit (`cachescope-xtask check-junit`): each consumer's own view
of every file, one line per file and consumer:

  PATH CONSUMER tests failures skipped errors TIMES     (TIMES: all, none, partial, inconsistent)
  PATH CONSUMER ERROR message

usage: python junit_read.py XML...   (run in the venv that has junitparser and xunitparser)
"""
import sys
import junitparser
import xunitparser

def timing(case_times, suite_times, suite_sums):
    known = [t is not None for t in case_times + suite_times]
    if not known or not any(known):
        return "none"
    if not all(known):
        return "partial"
    # A suite's cases ran inside it: their times add up to at most its own (3 decimals each).
    if any(total > suite + 0.001 * (n + 1) for total, n, suite in zip(*zip(*suite_sums), suite_times)):
        return "inconsistent"
    return "all"

def with_junitparser(path):
    xml = junitparser.JUnitXml.fromfile(path)
    suites = [xml] if isinstance(xml, junitparser.TestSuite) else list(xml)
    t = f = s = e = 0
    case_times, suite_times, sums = [], [], []
    for suite in suites:
        n, total = 0, 0.0
        for case in suite:
            t += 1
            n += 1
            kinds = [type(r) for r in case.result]
            f += junitparser.Failure in kinds
            s += junitparser.Skipped in kinds
            e += junitparser.Error in kinds
            case_times.append(case.time)
            total += case.time or 0.0
        # (junitparser reads a missing suite time as 0.0: the attribute itself tells)
        suite_times.append(suite.time if suite._elem.get("time") is not None else None)
        sums.append((total, n))
    declared = (sum(x.tests for x in suites), sum(x.failures for x in suites), sum(x.skipped for x in suites), sum(x.errors for x in suites))
    if declared != (t, f, s, e):
        raise ValueError(f"the XML declares tests/failures/skipped/errors {declared}, its cases are {(t, f, s, e)}")
    return t, f, s, e, timing(case_times, suite_times, sums)

def with_xunitparser(path):
    # parse() asserts the declared totals and refuses a repeated property name.
    ts, tr = xunitparser.parse(open(path))
    cases = list(ts)
    times = [c.time.total_seconds() if c.time is not None else None for c in cases]
    return tr.testsRun, len(tr.failures), len(tr.skipped), len(tr.errors), timing(times, [], [])

for path in sys.argv[1:]:
    for name, read in (("junitparser", with_junitparser), ("xunitparser", with_xunitparser)):
        try:
            print(path, name, *read(path))
        except Exception as err:  # reported per file and consumer, the others are still read
            print(path, name, "ERROR", type(err).__name__, str(err).replace("\n", " ") or "(no message)")
