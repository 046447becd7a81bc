"""Hostile manifests shared by the loader, command and fuzz tests."""

from __future__ import annotations

# "Billion laughs": 9**9 values in 800 bytes, once every alias is followed.
BILLION_LAUGHS = b"""\
version: 1
workspace: w
agents:
  a:
    harness:
      backend: openai
      l0: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
      l1: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
      l2: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
      l3: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
      l4: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
      l5: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
      l6: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
      l7: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
      l8: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""

# Where and why the loader refuses it: at its first alias, before building anything.
BILLION_LAUGHS_REFUSAL = (
    "line 8, column 15: agents.a.harness.l1.0: aliases (*a) are not allowed; write the value out"
)
