"""Drift watch (``./supersonic drift <stack>``, docs/drift.md): what changed on the cluster outside Pulumi, in Pulumi's
own objects and the Helm release's (``release``), less the declared ignore rules (``report``); ``check`` runs it."""
