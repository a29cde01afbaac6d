"""What the tree checks (tests/layering, tests/sizes) share: the project's
source files, the report every check prints, and their command line."""
import os
import sys


def source_files(root):
    """The C and C++ files under src/, include/ and python/, tests (*_test.cc) left
    out, as paths relative to `root`, sorted."""
    files = []
    for top in ("src", "include", "python"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".h", ".cc", ".c")) and not n.endswith("_test.cc"):
                    files.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(files)


def report(problems_by_file):
    """Prints every problem, then 'N passed, N failed' over the files;
    returns the exit code (1 when any file has a problem)."""
    passed = failed = 0
    for _, problems in problems_by_file:
        for p in problems:
            print(p)
        if problems:
            failed += 1
        else:
            passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def run(problems_of):
    """Checks every source file of the tree named by argv[1] (default: the
    repository holding this file) with problems_of(root, rel) -> messages;
    returns the exit code."""
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    return report((rel, problems_of(root, rel)) for rel in source_files(root))
