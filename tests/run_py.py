"""Runs a Python script of tests/ as `python3 SCRIPT ARGS...` would, from
its bytecode cached in the build (tests/suite.cmake, ADA_PYTHON_RUN).

  run_py.py SCRIPT ARGS...

A script started as `python3 SCRIPT` is compiled at every start (only
imported modules are cached): ada_itest.py, 3 000 lines, took ~0.15 s of
CPU per test for that alone. Here the script's code comes from the cache
and runs as the module __main__, with sys.argv and sys.path[0] (the
script's directory) as for `python3 SCRIPT`. The cache goes where the
interpreter's -X pycache_prefix says (the build), written even under
PYTHONDONTWRITEBYTECODE, which is about the source tree: the flag is
turned off before any import, so the library's modules are cached there
as well.
"""
import sys

if sys.pycache_prefix:
    sys.dont_write_bytecode = False
import os  # noqa: E402  (after the flag: these are cached too)
from importlib.machinery import SourceFileLoader  # noqa: E402



def run():
    if len(sys.argv) < 2:
        sys.exit("usage: run_py.py SCRIPT [ARGS...]")
    script = os.path.abspath(sys.argv[1])
    del sys.argv[0]
    sys.path[0] = os.path.dirname(script)
    loader = SourceFileLoader("__main__", script)
    code = loader.get_code("__main__")
    # this module's namespace becomes the script's, as if it had been run
    g = vars(sys.modules["__main__"])
    builtins = g["__builtins__"]
    g.clear()
    g.update(__name__="__main__", __file__=script, __loader__=loader, __doc__=None,
             __spec__=None, __package__=None, __builtins__=builtins)
    exec(code, g)


run()
