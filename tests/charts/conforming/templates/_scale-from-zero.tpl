{{- /* Whether the chart runs scale from zero: it then leaves the Triton replica count to KEDA and the admission
sidecar, as SuperSONIC does. */ -}}
{{- define "fixture.scaleFromZero" -}}{{ if .Values.scaleFromZero.enabled }}true{{ end }}{{- end -}}
