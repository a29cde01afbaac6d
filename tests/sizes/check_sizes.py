#!/usr/bin/env python3
"""Lists source files over the size limit and functions over the length
limit (DESIGN.md: split a file past ~600 lines, a function past ~120).

Tests (*_test.cc, tests/), tables (*.def, the PjRT ABI declarations) and
generated code are exempt. A function is found from its opening line (a
definition at namespace or class level: a signature ending in '{' on its
own line or after ')' ) to its matching brace, in formatted code. Prints
each one over, then 'N passed, N failed'; exits non-zero on any.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from source_checks import run  # noqa: E402

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 120
EXEMPT = {"src/pjrt/c_api.h"}  # the PjRT C ABI, declared as its header is
SIGNATURE = re.compile(r"^( {0,2}|\t?)[A-Za-z_][\w:<>,*& ~\[\]]*\([^;]*\)[^;{]*\{\s*$")


def code_only(line):
    """The line without string and char literals and // comments."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def long_functions(lines):
    lines = [code_only(l) for l in lines]
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        start = i
        # A signature may span lines: join up to 4 lines to find '... ) ... {'.
        text = line
        j = i
        while not text.rstrip().endswith(("{", ";", "}")) and j + 1 < len(lines) and j - i < 4:
            j += 1
            text += " " + lines[j].strip()
        if (SIGNATURE.match(text) and not re.match(r"^\s*(if|for|while|switch|else|do|namespace|class|struct|enum|return)\b", line)
                and "=" not in text.split("(")[0]):
            depth = 0
            k = j
            for k in range(j, len(lines)):
                depth += lines[k].count("{") - lines[k].count("}")
                if depth <= 0:
                    break
            length = k - start + 1
            name = re.sub(r"\(.*", "", text.strip()).split()[-1] if "(" in text else text.strip()
            if length > MAX_FUNCTION_LINES:
                out.append((start + 1, name, length))
            i = k + 1
            continue
        i += 1
    return out


def problems_of(root, rel):
    if rel in EXEMPT:
        return []
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        lines = f.read().split("\n")
    problems = []
    if len(lines) > MAX_FILE_LINES:
        problems.append(f"{rel}: {len(lines)} lines (limit {MAX_FILE_LINES}): split it along its concepts")
    for line, name, length in long_functions(lines):
        problems.append(f"{rel}:{line}: {name} is {length} lines (limit {MAX_FUNCTION_LINES})")
    return problems


if __name__ == "__main__":
    sys.exit(run(problems_of))
