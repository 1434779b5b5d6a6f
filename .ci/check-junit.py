"""The JUnit files of real runs read by junitparser (https://pypi.org/project/junitparser/),
as CI reporters read them: every suite and case has a time, every cell's case names its
scenario file, every failure and error has a type and a message.

Usage: python check-junit.py FILE...
"""

import sys

from junitparser import Error, Failure, JUnitXml


def check(path):
    problems = []
    cases = 0
    for suite in JUnitXml.fromfile(path):
        # As written: junitparser would sum the cases' times where a suite has none, but
        # dorny/test-reporter reads the attribute itself (a missing one became NaN).
        if suite._elem.get("time") is None:
            problems.append(f"suite {suite.name!r} has no time")
        is_cell = any(p.name == "verdict" for p in suite.properties())
        for case in suite:
            cases += 1
            if case._elem.get("time") is None:
                problems.append(f"case {case.name!r} has no time")
            # A cell's case (its suite carries the verdict) names its scenario file; a setup
            # error, a conformance or bisection case has none.
            if is_cell and not case._elem.get("file"):
                problems.append(f"case {case.name!r} names no file")
            for result in case.result:
                if isinstance(result, (Failure, Error)) and not (result.type and result.message):
                    problems.append(f"case {case.name!r}: a {result._tag} without type and message")
    if cases == 0:
        problems.append("no test case")
    return problems


def main():
    failed = False
    for path in sys.argv[1:]:
        for problem in check(path):
            print(f"{path}: {problem}", file=sys.stderr)
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
