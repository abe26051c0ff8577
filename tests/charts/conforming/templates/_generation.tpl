{{- /* The chart generation: the inference server's values block, component and container (the inference-server
       overlay replaces this file, as SuperSONIC's rename renamed them). The Envoy clusters follow the component. */}}
{{- define "fixture.inferenceKey" -}}triton{{- end -}}
{{- define "fixture.inferenceComponent" -}}triton{{- end -}}
{{- define "fixture.inferenceContainer" -}}triton-server{{- end -}}
