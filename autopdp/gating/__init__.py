"""The pre-deployment gate: an audit + a policy -> a verdict per rule, an exit code and JUnit.

=====================  ==============================================================
module                 what
=====================  ==============================================================
policy                 the TOML policy parsed and checked (``GatePolicy``)
limits                 a rule's limit as a minimum-effect test: fails only with confidence
robust                 ``robust = true``: a shape rule fails only on a learner-level violation
verdict                ``gate()``: every check, the verdict, gate.json and JUnit XML
=====================  ==============================================================

Above every stage; ``autopdp.gate``, ``autopdp.GatePolicy`` and ``autopdp.GateResult`` are the public names.
"""
