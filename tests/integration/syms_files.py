"""Reading a session's module symbol files in the tests (docs/format.md,
"Shared symbol bodies"): one reader for every script that looks at the
F lines themselves."""
import os


def syms_lines(path):
    """The lines of a .syms file, a version 2 file's body (docs/format.md) after them."""
    with open(path, errors="replace") as f:
        lines = f.readlines()
    body = [l.split(" ", 1)[1].strip() for l in lines if l.startswith("body ")]
    if body:
        with open(os.path.join(os.path.dirname(path), body[0]), errors="replace") as f:
            lines += f.readlines()
    return lines
