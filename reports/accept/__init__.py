"""`accept`: node acceptance, each host PASS, FAIL or INCONCLUSIVE against a rules file (accept, rules), over the
metrics a rule can address (host_metrics)."""

BUILT_ON: tuple[str, ...] = ()
