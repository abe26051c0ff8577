{{- /* 0.3.1 has no scale from zero: Triton always gets a replica count. */ -}}
{{- define "fixture.scaleFromZero" -}}{{- end -}}
