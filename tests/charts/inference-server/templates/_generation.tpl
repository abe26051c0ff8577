{{- /* The inferenceServer generation (SuperSONIC 42b2b933: templates/_helpers/_helpers.tpl names the objects
       <name>-inference-server; templates/inference-server/deployment.yaml, read at 4eb1509f, the component label
       and the container inference-server). */}}
{{- define "fixture.inferenceKey" -}}inferenceServer{{- end -}}
{{- define "fixture.inferenceComponent" -}}inference-server{{- end -}}
{{- define "fixture.inferenceContainer" -}}inference-server{{- end -}}
