{{- define "fixture.name" -}}{{ .Values.nameOverride | default .Release.Name }}{{- end -}}
{{- define "fixture.triton" -}}{{ include "fixture.name" . }}-{{ include "fixture.inferenceComponent" . }}{{- end -}}
{{- define "fixture.envoy" -}}{{ include "fixture.name" . }}-envoy{{- end -}}
{{- /* The Envoy clusters the generated configuration and the Lua filter share: triton_grpc_service and
       triton_admission, inference_server_grpc_service and inference_server_admission. */}}
{{- define "fixture.inferenceCluster" -}}{{ include "fixture.inferenceComponent" . | replace "-" "_" }}_grpc_service{{- end -}}
{{- define "fixture.admissionCluster" -}}{{ include "fixture.inferenceComponent" . | replace "-" "_" }}_admission{{- end -}}
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
