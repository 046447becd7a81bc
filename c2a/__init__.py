"""The composition root: the `c2a` command wires adapters, core and harness bridge together."""
