"""Drift watch (``./supersonic drift <stack>``): what changed on the cluster outside Pulumi, in the objects the program
manages directly (``managed``) and inside the Helm release (``release``), less the declared ignore rules (``rules``);
``report`` prints it, ``check`` runs both parts, the correction and the verb. docs/drift.md says more."""
