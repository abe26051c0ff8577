"""Drift watch: what changed on the cluster outside Pulumi, in the objects the program manages directly and inside
the Helm release (``./supersonic drift <stack>``).

- ``managed``: the engine's own view, a ``pulumi preview --refresh`` read field by field (what the refresh found
  changed since the last ``up``, and any step the preview then plans);
- ``release``: the live release's stored manifest against the live objects, by a server-side dry-run apply (the
  comparison Flux's helm-controller makes with ``driftDetection``), so a field counts only where applying the
  manifest would change it;
- ``rules``: the fields others own at run time, each ignored by a declared rule with its reason;
- ``report``: the table and the JSON; ``check`` runs both parts and the correction.
"""
