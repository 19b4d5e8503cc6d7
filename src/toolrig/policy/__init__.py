"""Governance: who may call what (rules), who must be asked (approvals), how often (rate limits), what happened (audit).

``governance.Governance`` wires these into the executor's extension points; docs/policy.md explains the model.
"""
