{{- define "fixture.name" -}}{{ .Values.nameOverride | default .Release.Name }}{{- end -}}
{{- /* The chart generation: the inference server's values block and component (the inference-server overlay
       renames both, as SuperSONIC's rename does). */}}
{{- define "fixture.inferenceKey" -}}triton{{- end -}}
{{- define "fixture.inferenceComponent" -}}triton{{- end -}}
{{- define "fixture.triton" -}}{{ include "fixture.name" . }}-{{ include "fixture.inferenceComponent" . }}{{- end -}}
{{- define "fixture.envoy" -}}{{ include "fixture.name" . }}-envoy{{- end -}}
{{- define "fixture.labels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ include "fixture.name" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}
{{- define "fixture.prometheus" -}}
{{- with .Values.prometheus.external -}}
{{- if .enabled }}{{ .scheme }}://{{ .url }}:{{ .port }}{{ else }}http://prometheus:9090{{ end -}}
{{- end -}}
{{- end -}}
