{{- /* The Envoy configuration the chart writes itself when envoy.external_config.load_from_configmap is false:
what SuperSONIC 42b2b933 generates (templates/envoy/configmaps.yaml, "envoy.configuration.yaml") with neither
auth nor a rate limiter, its cluster names those of the generation. Its ports are the chart's fixed ones
(envoy-service.yaml); SuperSONIC reads the same numbers from envoy.service.ports and the inference Service's
ports, whose defaults they are. */ -}}
{{- define "fixture.loopbackCluster" -}}
- name: {{ .name }}
  type: STATIC
  connect_timeout: 1s
  load_assignment:
    cluster_name: {{ .name }}
    endpoints:
      - lb_endpoints:
          - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: {{ .port }}}}}
{{- end -}}

{{- define "fixture.envoyGenerated" -}}
{{- $sfz := include "fixture.scaleFromZero" . }}
{{- $e := .Values.envoy }}
{{- $inference := include "fixture.inferenceCluster" . }}
admin:
  access_log:
    - name: envoy.access_loggers.file
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
        path: /tmp/admin_access.log
  address: {socket_address: {address: 0.0.0.0, port_value: 9901}}
static_resources:
  listeners:
    - name: listener_grpc
      address: {socket_address: {address: 0.0.0.0, port_value: 8001}}
      filter_chains:
        - filters:
            - name: envoy.filters.network.http_connection_manager
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                generate_request_id: true
                stat_prefix: ingress_grpc
                codec_type: AUTO
                http2_protocol_options: {}
                route_config:
                  name: local_route_grpc
                  virtual_hosts:
                    - name: backend_grpc
                      domains: ["*"]
                      routes:
                        {{- if $sfz }}
                        {{- /* The Lua filter holds RepositoryIndex while the inference server wakes: this route's
                               idle timeout covers that wait and what surrounds it. */}}
                        - match: {path: /inference.GRPCInferenceService/RepositoryIndex}
                          route:
                            cluster: {{ $inference }}
                            timeout: {{ $e.grpc_route_timeout }}
                            idle_timeout: {{ add (int .Values.scaleFromZero.readyTimeoutSeconds) 120 }}s
                            retry_policy:
                              retry_on: 5xx,connect-failure,refused-stream,unavailable
                              num_retries: 15
                              per_try_timeout: 2s
                              retry_back_off: {base_interval: 0.25s, max_interval: 1s}
                        {{- end }}
                        - match: {prefix: /}
                          route: {cluster: {{ $inference }}, timeout: {{ $e.grpc_route_timeout }}}
                http_filters:
                  {{- if $sfz }}
                  - name: envoy.filters.http.lua
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua
                      default_source_code: {filename: /etc/envoy/lua/envoy-filter.lua}
                  {{- end }}
                  - name: envoy.filters.http.router
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
    {{- if $sfz }}
    {{- include "fixture.loopbackCluster" (dict "name" (include "fixture.admissionCluster" .) "port" 8080) | nindent 4 }}
    {{- include "fixture.loopbackCluster" (dict "name" "envoy_admin" "port" 9901) | nindent 4 }}
    {{- end }}
    - name: {{ $inference }}
      connect_timeout: {{ if $sfz }}2s{{ else }}0.25s{{ end }}
      type: STRICT_DNS
      {{- if $sfz }}
      dns_refresh_rate: 1s
      {{- end }}
      lb_policy: {{ $e.loadBalancerPolicy }}
      {{- /* The Service's absolute name (trailing dot): no walk through the pod's search domains. */}}
      dns_lookup_family: V4_ONLY
      typed_extension_protocol_options:
        envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
          "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
          explicit_http_config: {http2_protocol_options: {}}
      load_assignment:
        cluster_name: {{ $inference }}
        endpoints:
          - lb_endpoints:
              - endpoint:
                  address:
                    socket_address:
                      address: {{ include "fixture.triton" . }}.{{ .Release.Namespace }}.svc.cluster.local.
                      port_value: 8001
{{- end -}}
